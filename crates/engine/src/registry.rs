//! The method registry: one row per method.
//!
//! A kernel family joins with one row: `kernel::<K>()` for a [`KernelMethod`], or
//! `kernel_with_glare::<K>()` when it also implements [`GlareKernel`], which adds its
//! `+glare` variant after it. Modifiers that need nothing from the kernel apply to every
//! row without one of their own: `compressed_variants()` adds the `+compress` variant of
//! every method registered before it.

use std::sync::Arc;

use anyhow::Result;
use spdnn_cuda::method::KernelMethod;
use spdnn_glare::GlareKernel;

use crate::compress::CompressRow;
use crate::cpu::CpuReference;
use crate::glare::{GlareRow, SUFFIX};
use crate::gpu::KernelRow;
use crate::method::Method;

/// A method that runs only when named ([`Registry::kernel_variant`]).
struct VariantRow<M>(M);

impl<M: Method> Method for VariantRow<M> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn needs_gpu(&self) -> bool {
        self.0.needs_gpu()
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn reads(&self) -> Vec<std::any::TypeId> {
        self.0.reads()
    }

    fn check(&self, options: &crate::OptionSet, neurons: usize) -> Result<()> {
        self.0.check(options, neurons)
    }

    fn run(
        &self,
        problem: &crate::method::Problem<'_>,
        config: &crate::method::RunConfig,
    ) -> Result<crate::method::MethodOutput> {
        self.0.run(problem, config)
    }
}

/// Every method this build knows.
pub struct Registry {
    methods: Vec<Arc<dyn Method>>,
}

impl Default for Registry {
    /// The CPU reference and every GPU method, each `+glare` variant after its method,
    /// then the `+compress` variant of each.
    fn default() -> Self {
        Self::empty()
            .method(CpuReference)
            .kernel_with_glare::<spdnn_bf::Bf>()
            .kernel_with_glare::<spdnn_snig::Snig>()
            .kernel_with_glare::<spdnn_xy::Xy>()
            .kernel_with_glare::<spdnn_snicit::Snicit>()
            .kernel::<spdnn_cusparse::Cusparse>()
            .kernel::<spdnn_dense::Dense>()
            .kernel::<spdnn_hp::Hp>()
            .kernel::<spdnn_blockdepend::BlockDepend>()
            .kernel::<spdnn_sz::Sz>()
            .kernel_variant::<spdnn_sz::SzT4>()
            .kernel::<spdnn_tcchain::TcChain>()
            .compressed_variants()
            .auto()
    }
}

impl Registry {
    /// A registry without methods.
    pub fn empty() -> Self {
        Self {
            methods: Vec::new(),
        }
    }

    /// Adds `method`.
    pub fn method(mut self, method: impl Method + 'static) -> Self {
        self.methods.push(Arc::new(method));
        self
    }

    /// Adds the `+compress` variant of every method registered so far, in their order.
    pub fn compressed_variants(mut self) -> Self {
        let variants: Vec<Arc<dyn Method>> = self
            .methods
            .iter()
            .map(|m| Arc::new(CompressRow::new(m.clone())) as Arc<dyn Method>)
            .collect();
        self.methods.extend(variants);
        self
    }

    /// Adds `auto`, which picks among the methods registered so far (it needs `cpu`).
    pub fn auto(self) -> Self {
        match crate::auto::Auto::new(&self.methods) {
            Ok(auto) => self.method(auto),
            Err(_) => self,
        }
    }

    /// Adds kernel family `K` as it is.
    pub fn kernel<K: KernelMethod>(self) -> Self {
        self.method(KernelRow::<K>::default())
    }

    /// Adds kernel family `K` as a variant of the method before it (a `+` name, e.g.
    /// `sz+t4`): it runs only when named, like the modifiers' variants.
    pub fn kernel_variant<K: KernelMethod>(self) -> Self {
        self.method(VariantRow(KernelRow::<K>::default()))
    }

    /// Adds kernel family `K` and its GLARE variant.
    pub fn kernel_with_glare<K: GlareKernel>(self) -> Self {
        self.kernel::<K>().method(GlareRow::<K>::default())
    }

    /// All registered methods.
    pub fn all(&self) -> impl Iterator<Item = &dyn Method> {
        self.methods.iter().map(|m| m.as_ref())
    }

    /// The method called `name`, or an error listing the known names.
    pub fn get(&self, name: &str) -> Result<&dyn Method> {
        self.all().find(|m| m.name() == name).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown method '{name}'; known methods: {}",
                self.names().join(", ")
            )
        })
    }

    /// Names of all methods.
    pub fn names(&self) -> Vec<&str> {
        self.all().map(|m| m.name()).collect()
    }

    /// The name of the GLARE variant of `name` (itself when it is one), when this
    /// registry has it: `bf` → `bf+glare`, `bf+compress` → `bf+glare+compress`.
    pub fn glare_variant(&self, name: &str) -> Option<&str> {
        let (base, compressed) = match name.strip_suffix(crate::compress::SUFFIX) {
            Some(base) => (base, crate::compress::SUFFIX),
            None => (name, ""),
        };
        let variant = if base.ends_with(SUFFIX) {
            name.to_string()
        } else {
            format!("{base}{SUFFIX}{compressed}")
        };
        self.find(&variant)
    }

    /// The name of the compressed variant of `name` (itself when it is one).
    pub fn compress_variant(&self, name: &str) -> Option<&str> {
        if name.ends_with(crate::compress::SUFFIX) {
            return self.find(name);
        }
        self.find(&format!("{name}{}", crate::compress::SUFFIX))
    }

    /// The registered name equal to `name`.
    fn find(&self, name: &str) -> Option<&str> {
        self.all().map(|m| m.name()).find(|n| *n == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glare::GlareSettings;
    use crate::method::{Problem, RunConfig};

    #[test]
    fn registry_order_puts_each_glare_variant_after_its_method() {
        let registry = Registry::default();
        let mut names = registry.names();
        assert_eq!(
            names.pop(),
            Some("auto"),
            "auto comes last, over every other row"
        );
        let (plain, compressed) = names.split_at(names.len() / 2);
        for (p, c) in plain.iter().zip(compressed) {
            assert_eq!(format!("{p}+compress"), *c);
        }
        assert_eq!(
            plain,
            [
                "cpu",
                "bf",
                "bf+glare",
                "snig",
                "snig+glare",
                "xy",
                "xy+glare",
                "snicit",
                "snicit+glare",
                "cusparse",
                "dense",
                "hp",
                "blockdepend",
                "sz",
                "sz+t4",
                "tcchain"
            ]
        );
        for method in registry.all().filter(|m| m.name() != "auto") {
            assert!(!method.description().is_empty());
            let base = method
                .name()
                .strip_suffix("+compress")
                .unwrap_or(method.name());
            assert_eq!(method.needs_gpu(), base != "cpu");
            let variant = method.name().contains('+');
            assert_eq!(method.in_default_run(), !variant, "{}", method.name());
        }
    }

    #[test]
    fn glare_variants_are_found_in_the_registry() {
        let registry = Registry::default();
        assert_eq!(registry.glare_variant("bf"), Some("bf+glare"));
        assert_eq!(registry.glare_variant("snicit"), Some("snicit+glare"));
        assert_eq!(registry.glare_variant("xy+glare"), Some("xy+glare"));
        assert_eq!(registry.glare_variant("cpu"), None);
        assert_eq!(registry.glare_variant("cusparse"), None);
        assert_eq!(registry.glare_variant("dense"), None);
        assert_eq!(registry.compress_variant("dense"), Some("dense+compress"));
        assert_eq!(registry.glare_variant("nonsense"), None);
        assert_eq!(registry.glare_variant("cusparse+glare"), None);
        assert_eq!(
            registry.glare_variant("xy+compress"),
            Some("xy+glare+compress")
        );
        assert_eq!(
            registry.compress_variant("xy+glare"),
            Some("xy+glare+compress")
        );
        assert_eq!(
            registry.compress_variant("cpu+compress"),
            Some("cpu+compress")
        );
        assert_eq!(registry.compress_variant("nonsense"), None);
    }

    #[test]
    fn glare_methods_check_their_options_before_looking_for_a_gpu() {
        let network = spdnn_sdgc::generator::network(64, 2, 0).unwrap();
        let input = spdnn_sdgc::images::synthetic(4, 64, 0).unwrap();
        let problem = Problem {
            network: &network,
            input: &input,
            bias: -0.3,
            upper_bound: 32.0,
        };
        let mut config = RunConfig::default();
        config
            .options
            .edit::<GlareSettings>(|g| g.segment = Some(32));
        let registry = Registry::default();
        let error = match registry.get("bf+glare").unwrap().run(&problem, &config) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("bf+glare accepted m = 32 for N = 64"),
        };
        assert!(error.contains("accepts 64"), "{error}");
        let method = registry.get("bf+glare").unwrap();
        assert!(method.check(&config.options, 64).is_err());
        assert!(method.check(&config.options, 32).is_ok());
        assert!(
            registry
                .get("bf")
                .unwrap()
                .check(&config.options, 64)
                .is_ok()
        );
    }

    #[test]
    fn each_method_reads_its_own_groups() {
        use std::any::TypeId;
        let registry = Registry::default();
        let reads = |name: &str| registry.get(name).unwrap().reads();
        let xy = TypeId::of::<spdnn_xy::XyOptions>();
        let snicit = TypeId::of::<spdnn_snicit::SnicitOptions>();
        let glare = TypeId::of::<GlareSettings>();
        let memory = TypeId::of::<spdnn_adaptive::MemorySettings>();
        assert!(reads("cpu").is_empty());
        assert_eq!(reads("xy"), vec![xy, memory]);
        assert_eq!(reads("snicit"), vec![snicit, xy, memory]);
        assert_eq!(reads("snicit+glare"), vec![snicit, xy, memory, glare]);
        assert_eq!(
            reads("cusparse+compress"),
            vec![TypeId::of::<spdnn_cuda::method::NoOptions>(), memory]
        );
        assert!(!reads("bf").contains(&xy) && reads("bf+glare").contains(&glare));
        assert_eq!(
            reads("dense"),
            vec![TypeId::of::<spdnn_dense::DenseOptions>(), memory]
        );
    }
}
