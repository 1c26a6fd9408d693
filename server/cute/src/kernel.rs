//! One kernel of a file: its declaration, its spec lines and its resolved launch.

use kernelpro_source::{Function, Param};
use kernelpro_spec::{KernelSignature, LaunchSpec, ResolveOptions, SpecLine};

pub(crate) struct KernelInfo {
    pub func: Function,
    pub spec_lines: Vec<SpecLine>,
    /// The launch with the first `tune` values; `None` without a valid spec.
    pub launch: Option<LaunchSpec>,
}

impl KernelInfo {
    /// The non-template kernel `name` with a body.
    pub fn find(text: &str, name: &str) -> Option<KernelInfo> {
        let func = kernelpro_source::parse(text).kernel(name)?.clone();
        if func.is_template || func.body_bytes.is_none() {
            return None;
        }
        let specs = kernelpro_spec::parse_file(text);
        let raw = specs.kernel(name);
        let signature = KernelSignature::of(&func);
        let launch = raw.and_then(|raw| {
            kernelpro_spec::resolve(raw, &specs.file_lets, &signature, &ResolveOptions::default()).ok()
        });
        Some(KernelInfo { spec_lines: raw.map(|r| r.lines.clone()).unwrap_or_default(), func, launch })
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.func.params.iter().find(|p| p.name == name)
    }

    /// An integer scalar parameter (the kind that can hold a matrix size).
    pub fn int_param(&self, name: &str) -> bool {
        const INTS: [&str; 8] =
            ["int", "unsigned", "unsigned int", "long", "long long", "size_t", "int64_t", "int32_t"];
        self.param(name).is_some_and(|p| !p.pointer && INTS.contains(&p.base.as_str()))
    }

    /// The value the launch passes for the scalar parameter `name`.
    pub fn scalar_value(&self, name: &str) -> Option<i64> {
        self.launch.as_ref()?.args.iter().find_map(|a| match a {
            kernelpro_spec::Arg::Scalar(s) if s.name == name => match s.value {
                kernelpro_spec::ScalarValue::I64(v) => Some(v),
                kernelpro_spec::ScalarValue::F64(_) => None,
            },
            _ => None,
        })
    }

    /// The right side of the spec line `PARAM = EXPR` that binds `param`.
    pub fn binding(&self, param: &str) -> Option<&str> {
        self.spec_lines.iter().find_map(|l| {
            let (lhs, rhs) = l.text.split_once('=')?;
            (lhs.trim() == param).then_some(rhs.trim())
        })
    }
}
