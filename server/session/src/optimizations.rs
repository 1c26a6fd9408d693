//! Finished searches: kept per document with the text their edits were made
//! against (so the apply edit re-bases onto the text now), and a finished or
//! cancelled search in words.

use kernelpro_config::words::Words;
use kernelpro_optimize::OptimizeOutcome;

/// A finished search: its edits apply while the lines they replace are unchanged (see [`crate::rebase`]).
#[derive(Debug, Clone)]
pub struct StoredOptimization {
    pub version: i32,
    pub original: String,
    pub outcome: OptimizeOutcome,
}

/// Keeps `found` as the last search of its kernel (replacing the previous one).
pub fn store(list: &mut Vec<StoredOptimization>, found: StoredOptimization) {
    list.retain(|o| o.outcome.kernel != found.outcome.kernel);
    list.push(found);
}

/// The finished search in words. A cancelled run says so first; what it
/// found before the cancel is offered as its own sentence, never as if the
/// run had finished.
pub fn result_message(outcome: &OptimizeOutcome, cancelled: bool, words: Words) -> String {
    let kernel = &outcome.kernel;
    let apply = words.code_action_hint();
    let mut message = match (cancelled, outcome.edit.is_some()) {
        (false, true) => format!("{} — apply it with {apply}.", outcome.title),
        (false, false) => format!("{}.", outcome.title),
        (true, true) => format!(
            "Optimize {kernel} was cancelled after {}. The best verified version so far is {:.2}x faster: apply it with {apply} if you want it.",
            evaluations(outcome.evaluations),
            outcome.speedup
        ),
        (true, false) => format!(
            "Optimize {kernel} was cancelled after {}, before any verified faster version was found.",
            evaluations(outcome.evaluations)
        ),
    };
    // What the user must know before applying it (a new launch, an LLM that was not used).
    // Neovim stops at a hit-enter prompt for a message wider than its command line: there
    // the notes stay in the kernel's hover, and the message says where.
    let (_, notes) = split_notes(&outcome.notes);
    if words.notes_in_hover && !notes.is_empty() {
        message.push_str(" Notes (what changes, how it was verified): hover the kernel.");
        return message;
    }
    for note in notes {
        message.push(' ');
        message.push_str(note);
    }
    message
}

/// A result's notes: those about the LLM (shown as warnings of their own) and the others.
fn split_notes(notes: &[String]) -> (Vec<&String>, Vec<&String>) {
    notes.iter().partition(|n| n.contains("LLM"))
}

/// The notes about the LLM: why it was not used, a request that failed or was refused.
pub fn llm_notes(notes: &[String]) -> Vec<String> {
    split_notes(notes).0.into_iter().cloned().collect()
}

fn evaluations(n: usize) -> String {
    if n == 1 { "1 evaluation".into() } else { format!("{n} evaluations") }
}

/// How far a search is, in percent: the further of evaluations over the
/// budget and time over the limit (`time`, a fraction), below 100 until it ends.
pub fn progress_percent(done: usize, max: usize, time: f64) -> u32 {
    let by_evaluations = (done * 100).checked_div(max).unwrap_or(0) as f64;
    by_evaluations.max(time * 100.0).clamp(0.0, 99.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_moves_with_time_when_the_budget_is_far() {
        assert_eq!(progress_percent(4, 500, 0.0), 0);
        assert_eq!(progress_percent(4, 500, 0.25), 25);
        assert_eq!(progress_percent(30, 60, 0.1), 50);
        assert_eq!(progress_percent(60, 60, 0.1), 99);
    }

    #[test]
    fn llm_failures_are_told_apart_from_the_other_notes() {
        let notes = vec![
            "the launch changed: block 256 -> 128".to_string(),
            "the LLM proposer is not used: its request was refused (a redirect to another host)".to_string(),
        ];
        assert_eq!(llm_notes(&notes), [notes[1].clone()]);
        let (llm, other) = split_notes(&notes);
        assert_eq!((llm.len(), other), (1, vec![&notes[0]]));
    }
}
