//! One kernel of a file as the recipes see it: the units reading's kernel
//! ([`kernelpro_source::units::Kernel`]: its tree-sitter nodes and parameters)
//! with its spec lines and its resolved launch shapes, which the source layer
//! does not read.

use kernelpro_source::Function;
use kernelpro_source::units::{Launch, Launches};
use kernelpro_spec::{FileSpecs, KernelSignature, LaunchSpec, ResolveOptions, SpecLine};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The most tune combinations resolved when a recipe needs every possible launch.
const MAX_TUNE_COMBOS: usize = 256;

/// A kernel's spec as the file gives it, resolved into launches on demand.
struct Spec {
    specs: FileSpecs,
    func: Function,
}

impl Spec {
    fn launch_with(&self, overrides: BTreeMap<String, i64>) -> Option<LaunchSpec> {
        let raw = self.specs.kernel(&self.func.name)?;
        let signature = KernelSignature::of(&self.func);
        let opts = ResolveOptions { overrides, ..ResolveOptions::default() };
        kernelpro_spec::resolve(raw, &self.specs.file_lets, &signature, &opts).ok()
    }

    fn all_launches(&self) -> Option<Vec<LaunchSpec>> {
        let first = self.launch_with(BTreeMap::new())?;
        let mut combos: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new()];
        for t in &first.tunables {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    t.candidates.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(t.name.clone(), *v);
                        c
                    })
                })
                .collect();
            if combos.len() > MAX_TUNE_COMBOS {
                return None;
            }
        }
        combos.into_iter().map(|c| self.launch_with(c)).collect()
    }
}

/// A resolved launch as the units reading needs it.
fn shape(l: &LaunchSpec) -> Launch {
    let ints = l.int_scalars();
    Launch { grid: l.grid, block: l.block, ints }
}

impl Launches for Spec {
    fn first(&self) -> Option<Launch> {
        self.launch_with(BTreeMap::new()).as_ref().map(shape)
    }
    fn all(&self) -> Option<Vec<Launch>> {
        Some(self.all_launches()?.iter().map(shape).collect())
    }
}

pub(crate) struct Kernel<'a> {
    units: kernelpro_source::units::Kernel<'a>,
    spec: Rc<Spec>,
}

/// The recipes read the kernel's nodes, parameters and model through the units reading's kernel
/// (one definition of each), and add what comes from the spec.
impl<'a> std::ops::Deref for Kernel<'a> {
    type Target = kernelpro_source::units::Kernel<'a>;
    fn deref(&self) -> &Self::Target {
        &self.units
    }
}

impl<'a> Kernel<'a> {
    /// The kernel `name` with a body, template or not: rewrites keep the user's types as written, and
    /// one that does not compile for the instantiation is rejected like any other candidate.
    pub fn find(text: &'a str, name: &str) -> Option<Kernel<'a>> {
        let units = kernelpro_source::units::Kernel::find(text, name, None)?;
        let specs = kernelpro_source::parsed::memo("spec::parse_file", text, "", || kernelpro_spec::parse_file(text));
        let spec = Rc::new(Spec { specs, func: units.func.clone() });
        Some(Kernel { units: units.launched(spec.clone()), spec })
    }

    /// The C type of buffer parameter `name` as the spec's launch gives it (a template's `T` resolved).
    pub fn buffer_type(&self, name: &str) -> Option<&'static str> {
        use kernelpro_spec::ElemType;
        let launch = self.launch()?;
        let b = launch.buffers().find(|b| b.name == name)?;
        Some(match b.elem {
            ElemType::Float => "float",
            ElemType::Double => "double",
            ElemType::Int => "int",
            ElemType::Unsigned => "unsigned",
            ElemType::Int64 => "long long",
            _ => return None,
        })
    }

    /// The kernel's own spec lines (empty without a spec block).
    pub fn spec_lines(&self) -> &[SpecLine] {
        self.spec.specs.kernel(&self.func.name).map_or(&[], |k| &k.lines)
    }

    /// Byte offset of a spec line's text in the file.
    pub fn spec_offset(&self, line: &SpecLine) -> usize {
        let start: usize = self.text.split_inclusive('\n').take(line.line as usize).map(str::len).sum();
        start + line.col as usize
    }

    /// The launch with the spec's first `tune` values; `None` without a valid spec.
    pub fn launch(&self) -> Option<LaunchSpec> {
        self.spec.launch_with(BTreeMap::new())
    }

    /// Every launch the search may pick (one per combination of `tune` values);
    /// `None` when the spec does not resolve or has too many combinations.
    pub fn all_launches(&self) -> Option<Vec<LaunchSpec>> {
        self.spec.all_launches()
    }

    /// The integer value scalar parameter `name` takes in every launch the search may pick; `None`
    /// without a spec, with no launch, or where a launch does not give it one.
    pub fn scalar_values(&self, name: &str) -> Option<Vec<i64>> {
        let values: Vec<i64> = self
            .all_launches()?
            .iter()
            .map(|l| l.int_scalars().into_iter().find_map(|(n, v)| (n == name).then_some(v)))
            .collect::<Option<_>>()?;
        (!values.is_empty()).then_some(values)
    }

    /// The element count of buffer parameter `name`, when every launch the search may pick gives it the same one.
    pub fn buffer_count(&self, name: &str) -> Option<u64> {
        let counts: Vec<u64> = self
            .all_launches()?
            .iter()
            .map(|l| l.buffers().find(|b| b.name == name).map(|b| b.count))
            .collect::<Option<_>>()?;
        let first = *counts.first()?;
        counts.iter().all(|c| *c == first).then_some(first)
    }
}
