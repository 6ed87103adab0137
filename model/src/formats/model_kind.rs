//! Which form of the performance model prices a machine ([`ModelKind`]); the machine view each
//! form sees is `cost_model::forms::with_model`.

use serde::{Deserialize, Serialize};

/// The form of the performance model (docs/MODEL.md, "Model forms").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// The default: the ABSINTHE form with a store counted twice, the compute part, the
    /// crowding charge, the arrays-per-group limit, inlining and streaming.
    #[default]
    Linear,
    /// The original ABSINTHE model as published: its six parameters (fast memory, slow-memory
    /// base and stream, each per row start and per cell), a store weighted like a load, no
    /// compute part, no crowding charge, no arrays-per-group limit, no inlining and no
    /// streaming. A reproduction mode.
    Absinthe,
}

impl ModelKind {
    pub const ALL: [ModelKind; 2] = [ModelKind::Linear, ModelKind::Absinthe];

    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Linear => "linear",
            ModelKind::Absinthe => "absinthe",
        }
    }

    pub fn parse(text: &str) -> Result<ModelKind, String> {
        ModelKind::ALL
            .into_iter()
            .find(|k| k.name() == text)
            .ok_or_else(|| format!("unknown model `{text}` (linear or absinthe)"))
    }

    /// What a store counts in the slow-memory stream weights against 1 for a load: 2 in the
    /// default form (write-allocate reads the line, the write-back writes it;
    /// docs/decisions/0006-stores-count-twice.md), 1 as published.
    pub const fn store_weight(self) -> u64 {
        match self {
            ModelKind::Linear => 2,
            ModelKind::Absinthe => 1,
        }
    }

    /// Whether the form prices inlined stencils (and so the inline search may run).
    pub fn inlines(self) -> bool {
        self == ModelKind::Linear
    }

    pub fn is_default(&self) -> bool {
        *self == ModelKind::Linear
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
