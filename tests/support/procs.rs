//! Processes seen through /proc, for tests that check nothing is left running.

#![allow(dead_code)] // each test binary uses a different part of this helper

use std::time::{Duration, Instant};

/// (ppid, process group, state) of a live process.
pub fn stat(pid: u32) -> Option<(u32, u32, char)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s[s.rfind(')')? + 2..].split(' ');
    let state = f.next()?.chars().next()?;
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?, state))
}

pub fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Live (non-zombie) processes matching `pred` on (ppid, pgrp), after letting
/// killed ones be reaped for up to five seconds.
pub fn live(pred: impl Fn(u32, u32) -> bool) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found: Vec<u32> =
            pids().into_iter().filter(|&p| stat(p).is_some_and(|(pp, g, st)| st != 'Z' && pred(pp, g))).collect();
        if found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pid of the server spawned with `KP_TEST_TAG=tag` in its environment.
pub fn server_pid(tag: &str) -> u32 {
    let needle = format!("KP_TEST_TAG={tag}\0");
    pids()
        .into_iter()
        .find(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .expect("the server process")
}
