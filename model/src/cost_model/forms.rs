//! The machine view each form of the model sees ([`with_model`]).

use std::path::Path;

use crate::formats::diagnostic::{Diagnostic, FileError};
use crate::formats::limits;
use crate::formats::machine::{Compute, Crowded, Machine, ModelMachine};
use crate::formats::model_kind::ModelKind;

/// What a command changes of a machine file before pricing with it (`--cache-fraction`,
/// `--group-arrays`, `--model`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Overrides {
    pub cache_fraction: Option<f64>,
    /// `Some(None)` lifts the file's limit.
    pub group_arrays: Option<Option<usize>>,
    /// The form to price with; None: the form the file's parameters were fitted for.
    pub model: Option<ModelKind>,
}

/// A machine file as a command prices with it.
#[derive(Clone, Debug)]
pub struct Priced {
    pub machine: Machine,
    pub view: ModelMachine,
    /// Set when the form priced with is not the one the parameters were fitted for.
    pub warning: Option<String>,
}

/// The machine file at `path` with `overrides` applied, viewed for values of `value_bytes`
/// bytes; every error names the file.
pub fn load_priced(
    path: &Path,
    overrides: Overrides,
    value_bytes: usize,
) -> Result<Priced, FileError> {
    let mut machine = Machine::load(path)?;
    let refuse =
        |key: &str, message: String| FileError::single(path, Diagnostic::new(key, message));
    if let Some(f) = overrides.cache_fraction {
        machine.cache_fraction = limits::cache_fraction(f).map_err(|m| refuse("", m))?;
    }
    if let Some(n) = overrides.group_arrays {
        machine.group_arrays = n;
    }
    let view = machine.model_view(value_bytes).map_err(|mut d| {
        // A capacity that no value fits because of `--cache-fraction` is that flag's fault.
        if let Some(f) = overrides.cache_fraction {
            for d in d
                .iter_mut()
                .filter(|d| d.message.contains("x cache_fraction"))
            {
                d.message = format!("with --cache-fraction {}: {}", limits::shown(f), d.message);
            }
        }
        FileError::new(path, d)
    })?;
    let fitted = machine
        .learned
        .as_ref()
        .map_or_else(ModelKind::default, |l| l.model);
    let model = overrides.model.unwrap_or(fitted);
    let warning = (model != fitted && machine.learned.is_some()).then(|| {
        format!(
            "{}: its parameters were fitted for the {fitted} model; pricing with the {model} model",
            path.display()
        )
    });
    let view = with_model(&view, model).map_err(|e| refuse("", format!("--model {model}: {e}")))?;
    Ok(Priced {
        machine,
        view,
        warning,
    })
}

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
