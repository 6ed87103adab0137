//! One stencil of a group as the tile loop runs it: its loop and store boxes, its tile buffer,
//! whether it shares the previous row loop, its expression as C, and on the CUDA target its
//! barrier and register rounds.

use std::cell::RefCell;

use absinthe_model::cost_model::boxes::{tile_intervals, Interval, RegisterWindow};
use absinthe_model::language::analysis::ArrayKind;

use super::access::{buffer_access, global_access, register_access, staged_access};
use super::group::GroupLowering;
use super::row_loops::joins_row_loop;
use super::types::{BodyCode, IntervalCode, LocalBuffer, LocalDef, StencilStep, StepRead};
use super::Target;
use crate::cexpr::c_expr;
use crate::CodegenError;
use absinthe_model::language::program::{Stencil, ValueType};

/// Loop box and store box per dimension per tile index.
type StepBoxes = ([Vec<Interval>; 3], [Vec<Interval>; 3]);

impl GroupLowering<'_> {
    /// The step of stencil `s`, after the group's `steps` so far, and whether it joins
    /// `last_loop`, the last row loop of those steps.
    pub(super) fn step(
        &self,
        s: usize,
        steps: &[StencilStep],
        last_loop: Option<&[usize]>,
    ) -> Result<(StencilStep, bool), CodegenError> {
        let info = &self.lowering.analysis.stencils[s];
        let (loop_box, store_box) = self.step_boxes(s);
        let read_in_group = info.readers.iter().any(|&r| self.contains(r));
        let is_stored = self.lowering.stored[s];
        let buffer = read_in_group.then(|| self.local_buffer(s, &loop_box));
        check_step(
            &info.name,
            buffer.is_some(),
            is_stored,
            &loop_box,
            &store_box,
        )?;
        // A step that writes a buffer and its global array runs three loops per row: it shares
        // none.
        let joins = self.lowering.target == Target::OpenMp
            && !(read_in_group && is_stored)
            && last_loop.is_some_and(|row_loop| {
                let analysis = self.lowering.analysis;
                joins_row_loop(analysis, steps, row_loop, s, &loop_box, self.lag(s))
            });
        let same_loop: Vec<usize> = match last_loop {
            Some(row_loop) if joins => row_loop.iter().map(|&n| steps[n].stencil).collect(),
            _ => Vec::new(),
        };
        let (body, reads) = self.step_code(s, steps, &same_loop, buffer.as_ref());
        let read_windows = self.read_windows(s);
        let own_window = buffer.as_ref().and_then(|b| b.registers);
        let rounds = own_window
            .or_else(|| read_windows.iter().flatten().next().copied())
            .map(|r| r.rounds);
        let reads_staged = info
            .accesses
            .iter()
            .any(|(a, _)| self.device.inputs.iter().any(|i| i.array == *a));
        let barrier = (buffer.is_some() && own_window.is_none())
            || read_windows.iter().any(Option::is_none)
            || reads_staged;
        let step = StencilStep {
            stencil: s,
            name: info.name.clone(),
            ident: format!("s{s}"),
            widths: self.widths_of(s),
            lag: self.lag(s),
            row_lag: 0,
            buffer_write: buffer.as_ref().map(|b| self.buffer_write(b)),
            value: format!("v_s{s}"),
            extent: info.extent,
            reads_buffers: !read_windows.is_empty(),
            barrier,
            rounds,
            loop_box,
            store_box: is_stored.then_some(store_box),
            global: is_stored.then(|| format!("g_{}", info.name)),
            store: is_stored.then(|| self.global(&info.name, [0; 3])),
            buffer,
            lets: body.lets,
            code: body.code,
            intervals: body.intervals,
            computation: info.computation.name().to_string(),
            nontemporal: false,
            reads,
        };
        Ok((step, joins))
    }

    /// Stencil `s`'s loop and store boxes over the group's tiles (`boxes::tile_intervals`, the
    /// geometry the GPU model counts too).
    fn step_boxes(&self, s: usize) -> StepBoxes {
        let domain = self.lowering.analysis.domain;
        let extent = self.lowering.analysis.stencils[s].extent;
        let widths = self.widths_of(s);
        let mut loop_box: [Vec<Interval>; 3] = Default::default();
        let mut store_box: [Vec<Interval>; 3] = Default::default();
        for d in 0..3 {
            for t in 0..self.grid[d] {
                let (_, l, st) =
                    tile_intervals(domain[d], self.tile_size[d], t, widths[d], extent[d]);
                loop_box[d].push(l);
                store_box[d].push(st);
            }
        }
        // A 2-D stencil at its level only (its groups compute whole columns: one tile).
        if let Some(level) = self.lowering.analysis.stencils[s].plane {
            loop_box[2] = vec![[level, level + 1]; self.grid[2]];
            store_box[2] = loop_box[2].clone();
        }
        (loop_box, store_box)
    }

    /// Stencil `s`'s `let` locals and expression (or intervals) as C, and its memory reads in
    /// source order. Step locals are named per stencil: steps sharing a row loop share its
    /// scope. `buffer` is the step's own buffer, which a sweep's reads of itself read.
    fn step_code(
        &self,
        s: usize,
        steps: &[StencilStep],
        same_loop: &[usize],
        buffer: Option<&LocalBuffer>,
    ) -> (BodyCode, Vec<StepRead>) {
        let program = self.lowering.program;
        let vt = program.value_type;
        let reads = RefCell::new(Vec::new());
        let access = |array: &str, off: [i32; 3]| {
            let (c, source) = match (array == program.stencils[s].name, buffer) {
                // A sweep reads a level it computed before: from its buffer, else its array.
                (true, Some(b)) => (buffer_access(b, off, self.lowering.stream_dim), Some(true)),
                (true, None) => (self.global(array, off), Some(false)),
                _ => self.read(s, array, off, steps, same_loop),
            };
            if let Some(buffer) = source {
                reads.borrow_mut().push(StepRead {
                    c: c.clone(),
                    array: array.to_string(),
                    buffer,
                    offset: off,
                });
            }
            c
        };
        let step_local = |name: &str| format!("l{s}_{name}");
        let st = &program.stencils[s];
        let body = body_code(st, program.domain[2], vt, &access, &step_local);
        (body, reads.into_inner())
    }

    /// Stencil `s`'s read of `array` at `off` as C: the value variable of a producer in the same
    /// row loop at offset zero, an in-group producer's buffer or register window, else the
    /// global array; with, for a memory read, whether it reads a tile buffer.
    fn read(
        &self,
        s: usize,
        array: &str,
        off: [i32; 3],
        steps: &[StencilStep],
        same_loop: &[usize],
    ) -> (String, Option<bool>) {
        match self.lowering.program.stencil_index(array) {
            Some(p) if same_loop.contains(&p) && off == [0; 3] => (format!("v_s{p}"), None),
            Some(p) if self.contains(p) => {
                let b = steps
                    .iter()
                    .find(|st| st.stencil == p)
                    .and_then(|st| st.buffer.as_ref())
                    .expect("in-group producer has a buffer");
                match b.registers {
                    // Plane k + dz of p, read at step t by this stencil (k = t + lag(s)), was
                    // computed at step t + lag(s) + dz - lag(p) and shifted down once per step
                    // since: its slot counts back from the newest, window - 1.
                    Some(r) => (
                        register_access(
                            b,
                            r.window as i64 - 1 - (self.lag(p) - self.lag(s) - off[2] as i64),
                        ),
                        None,
                    ),
                    None => (buffer_access(b, off, self.lowering.stream_dim), Some(true)),
                }
            }
            _ => match self.staged_input(array) {
                Some(input) => (staged_access(input, off), Some(true)),
                None => (self.global(array, off), Some(false)),
            },
        }
    }

    /// `array`'s element at `off` in global memory, as C.
    fn global(&self, array: &str, off: [i32; 3]) -> String {
        let l = self.lowering;
        global_access(l.analysis, l.alloc, array, off, &format!("g_{array}"))
    }

    /// The element of buffer `b` that a step writes at `(i, j, k)`, as C.
    fn buffer_write(&self, b: &LocalBuffer) -> String {
        match b.registers {
            Some(r) => register_access(b, r.window as i64 - 1),
            None => buffer_access(b, [0; 3], self.lowering.stream_dim),
        }
    }

    /// The in-group producers stencil `s` reads, one entry per access: each one's register
    /// window, if any.
    fn read_windows(&self, s: usize) -> Vec<Option<RegisterWindow>> {
        let analysis = self.lowering.analysis;
        analysis.stencils[s]
            .accesses
            .iter()
            .filter_map(|(a, _)| match analysis.arrays[*a].kind {
                ArrayKind::Stencil(p) if self.contains(p) => Some(self.registers_of(p)),
                _ => None,
            })
            .collect()
    }
}

/// Refuses a step that is neither stored nor buffered, and one without a buffer whose loop boxes
/// exceed its store boxes (non-zero evaluation widths with no in-group reader).
fn check_step(
    name: &str,
    buffered: bool,
    is_stored: bool,
    loop_box: &[Vec<Interval>; 3],
    store_box: &[Vec<Interval>; 3],
) -> Result<(), CodegenError> {
    if !buffered && !is_stored {
        return Err(CodegenError::Configuration(format!(
            "stencil `{name}` is neither stored nor read in its group"
        )));
    }
    if !buffered && loop_box != store_box {
        return Err(CodegenError::Configuration(format!(
            "stencil `{name}` has no in-group reader but non-zero evaluation widths"
        )));
    }
    Ok(())
}

/// A stencil's body as C: its lets and expression, or with `intervals:` each interval's, in
/// level order (the intervals cover `0..nz`). `access` prints a read, `local` a local's name.
pub(super) fn body_code(
    st: &Stencil,
    nz: usize,
    vt: ValueType,
    access: &dyn Fn(&str, [i32; 3]) -> String,
    local: &dyn Fn(&str) -> String,
) -> BodyCode {
    let code = |b: usize| {
        let body = &st.bodies[b];
        let lets = body
            .lets
            .iter()
            .map(|l| LocalDef {
                ident: local(&l.name),
                code: c_expr(&l.expr, vt, access, local),
            })
            .collect();
        (lets, c_expr(&body.expr, vt, access, local))
    };
    if !st.has_intervals() {
        let (lets, code) = code(0);
        return BodyCode {
            lets,
            code,
            intervals: Vec::new(),
        };
    }
    let mut order: Vec<usize> = (0..st.bodies.len()).collect();
    order.sort_by_key(|&b| st.body_levels(b, nz).0);
    let last = order.len() - 1;
    BodyCode {
        lets: Vec::new(),
        code: String::new(),
        intervals: order
            .into_iter()
            .enumerate()
            .map(|(n, b)| {
                let (lets, code) = code(b);
                let hi = st.body_levels(b, nz).1;
                let branch = match (n, n == last) {
                    (_, true) if n > 0 => "else ".to_string(),
                    (0, _) => format!("if (k < {hi}) "),
                    _ => format!("else if (k < {hi}) "),
                };
                IntervalCode {
                    hi,
                    branch,
                    lets,
                    code,
                }
            })
            .collect(),
    }
}
