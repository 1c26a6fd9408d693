//! MCTS vs greedy vs random on the synthetic deceptive landscape, at equal budget.
//! `cargo run -p kernelpro-search --example landscape [SEEDS]`; the environment
//! variables C (exploration), MAX (max backup), WF (wide factor) and ALPHA
//! (widening exponent) override the MCTS defaults.

use kernelpro_search::synthetic::{LandscapeEvaluator, MoveProposer, source};
use kernelpro_search::{Backup, Search, SearchConfig, Strategy};

fn main() {
    let seeds: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20);
    println!("{:<8} {:>10} {:>10} {:>8} {:>8} {:>8}", "strategy", "geomean", "mean ln", ">=2x", ">=5x", "evals");
    for strategy in [Strategy::Mcts, Strategy::Greedy, Strategy::Random] {
        let mut logs = Vec::new();
        let mut evals = 0;
        for seed in 0..seeds {
            let mut config = SearchConfig { strategy, seed, ..SearchConfig::default() };
            override_from_env(&mut config);
            let result = Search::new(config)
                .run(&source(&[]), &mut MoveProposer::new(seed), &mut LandscapeEvaluator::default())
                .expect("the original evaluates");
            logs.push(result.best_speedup.ln());
            evals += result.evaluations;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let share = |p: f64| logs.iter().filter(|&&l| l >= p.ln() - 1e-9).count() as f64 / n;
        println!(
            "{:<8} {:>9.2}x {:>10.3} {:>7.0}% {:>7.0}% {:>8.1}",
            format!("{strategy:?}").to_lowercase(),
            mean.exp(),
            mean,
            100.0 * share(2.0),
            100.0 * share(5.0),
            evals as f64 / n
        );
    }
}

fn override_from_env(config: &mut SearchConfig) {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
    if let Some(c) = var("C") {
        config.exploration = c;
    }
    if std::env::var_os("MAX").is_some() {
        config.backup = Backup::Max;
    }
    if let Some(wf) = var("WF") {
        config.widening.wide_factor = wf;
    }
    if let Some(alpha) = var("ALPHA") {
        config.widening.alpha = alpha;
    }
}
