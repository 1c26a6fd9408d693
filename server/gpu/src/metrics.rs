//! Work counts that turn a time into a rate.

use kernelpro_spec::LaunchSpec;

/// Floating-point operations of one launch from the `op` hint: `gemm M N K ...` is 2·M·N·K.
/// Sizes are `let` names or integers.
pub fn flops(launch: &LaunchSpec) -> Option<f64> {
    let mut words = launch.op.as_deref()?.split_whitespace();
    if words.next()? != "gemm" {
        return None;
    }
    let mut size = || -> Option<f64> {
        let w = words.next()?;
        launch.lets.get(w).copied().or_else(|| w.parse().ok()).map(|v| v as f64)
    };
    Some(2.0 * size()? * size()? * size()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_gemm_flops_from_the_op_hint() {
        let mut launch: LaunchSpec = serde_json::from_str(include_str!("../tests/no_driver_job.json"))
            .map(|j: crate::Job| j.kernel.launch)
            .unwrap();
        launch.lets.insert("M".into(), 1024);
        launch.op = Some("gemm M M 512 row".into());
        assert_eq!(flops(&launch), Some(2.0 * 1024.0 * 1024.0 * 512.0));
        launch.op = Some("conv 3 3".into());
        assert_eq!(flops(&launch), None);
        launch.op = Some("gemm M X 2".into());
        assert_eq!(flops(&launch), None);
    }
}
