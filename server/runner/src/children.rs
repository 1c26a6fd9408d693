//! The process groups of the children running now (every child is started by
//! [`crate::run_tool`]), so that
//! a signal ending this process ends them too: each child leads its own
//! process group, out of reach of a SIGTERM or SIGINT sent to us.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

static LIVE: Mutex<Option<HashSet<i32>>> = Mutex::new(None);
/// Set once the process is ending: a child registered after that is killed at once.
static ENDING: AtomicBool = AtomicBool::new(false);

fn live() -> MutexGuard<'static, Option<HashSet<i32>>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A live child's process group, removed from the registry when dropped
/// (after the runner has killed and reaped the group).
#[derive(Debug)]
pub struct Registration(i32);

/// Records the group `pgid` (a child started with `process_group(0)`: its pid).
pub fn register(pgid: i32) -> Registration {
    live().get_or_insert_with(HashSet::new).insert(pgid);
    if ENDING.load(Ordering::SeqCst) {
        kill_group(pgid);
    }
    Registration(pgid)
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(set) = live().as_mut() {
            set.remove(&self.0);
        }
    }
}

/// The groups registered now.
pub fn groups() -> Vec<i32> {
    live().as_ref().map(|s| s.iter().copied().collect()).unwrap_or_default()
}

/// Kills every registered group (SIGKILL) and every one registered from now
/// on; returns how many there were. For a handler of SIGTERM/SIGINT, just
/// before the process exits.
pub fn kill_all() -> usize {
    ENDING.store(true, Ordering::SeqCst);
    let groups = groups();
    for &pgid in &groups {
        kill_group(pgid);
    }
    groups.len()
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals the group the child leads.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    // `kill_all` ends the process's children for good (other tests of this
    // binary run children too): the SIGTERM tests in `tests/stress.rs` cover it
    // on the real binary. Here: registration and the group kill.
    #[test]
    fn registered_groups_are_listed_until_dropped_and_killed_whole() {
        let mut child = Command::new("/bin/sh").args(["-c", "sleep 30 & sleep 30"]).process_group(0).spawn().unwrap();
        let pgid = child.id() as i32;
        let registration = register(pgid);
        assert!(groups().contains(&pgid));
        kill_group(pgid);
        assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
        drop(registration);
        assert!(!groups().contains(&pgid));
    }
}
