//! The machine view each form of the model sees ([`with_model`]).

use crate::formats::machine::{Compute, Crowded, ModelMachine};
use crate::formats::model_kind::ModelKind;

/// `view` priced with `kind`. The published form reads only the six parameters of
/// `params.fast`, `params.slow_base` and `params.slow_stream`: the compute part, the
/// crowding charge and the exposed share are dropped, groups never stream and touch any number of arrays. It is a
/// CPU model: a GPU view is refused.
pub fn with_model(view: &ModelMachine, kind: ModelKind) -> Result<ModelMachine, String> {
    let mut priced = *view;
    priced.model = kind;
    if kind == ModelKind::Absinthe {
        if view.gpu {
            return Err(
                "the absinthe model is the published CPU model; this machine file has a `gpu:` section"
                    .into(),
            );
        }
        priced.params.compute = Compute::default();
        priced.params.crowded = Crowded::default();
        priced.params.exposed = 0.0;
        priced.streams = false;
        priced.group_arrays = usize::MAX;
    }
    Ok(priced)
}
