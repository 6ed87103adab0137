//! The counting: every access of a thread through each level's LRU cache, fully associative
//! and set-associative at once, with its misses split into compulsory (the line's first access
//! by the thread) and capacity (every other miss; in the set-associative cache this includes
//! conflict misses).
//!
//! A fully associative LRU cache of `C` lines misses an access exactly when `C` or more other
//! lines were accessed since its line was last (its stack distance is `C` or more): one
//! recency list per line size, cut at every level's capacity, gives HAYSTACK's counts for the
//! access stream at every level at once; the set-associative cache keeps one recency order per
//! set (`line mod sets`).
//!
//! Most accesses of a row go to the line their access went to at the cell before. A row is
//! counted per line a stream enters ([`Class::row`]): the lines of the cell before and of the
//! current one form a recent prefix of every recency order, in any order among themselves;
//! only a line entering the prefix is looked up, and one leaving it is put where its last
//! access places it. Exact, not an estimate (see [`Class::row`] for why).

use serde::Serialize;

use crate::behind::{includes, Behind};
use crate::fold::{Distinct, Foldings};
use crate::levels::ThreadLevel;
use crate::lru::{Sets, Stack};
use crate::walk::{RowAccess, Sink};

/// One access site's (or a sum's) counts at one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub accesses: u64,
    /// First accesses of a line by its thread: misses in any cache.
    pub compulsory: u64,
    /// Other misses of the fully associative cache.
    pub capacity: u64,
    /// Compulsory misses of the set-associative cache (the same first accesses).
    pub compulsory_sa: u64,
    /// Other misses of the set-associative cache: capacity and conflict misses.
    pub capacity_sa: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.accesses += o.accesses;
        self.compulsory += o.compulsory;
        self.capacity += o.capacity;
        self.compulsory_sa += o.compulsory_sa;
        self.capacity_sa += o.capacity_sa;
    }

    /// Misses of the fully associative cache.
    pub fn misses(&self) -> u64 {
        self.compulsory + self.capacity
    }

    /// Misses of the set-associative cache.
    pub fn misses_sa(&self) -> u64 {
        self.compulsory_sa + self.capacity_sa
    }
}

/// One level's set-associative cache, and where it sits in its line size's recency list.
struct ClassLevel {
    /// Its index among the levels (and in each site's counts).
    level: usize,
    /// Its zone in the class's stack: the line hits when found in this zone or a nearer one.
    zone: usize,
    sets: Sets,
}

/// A set-associative level counted behind the class's first level ([`crate::behind`]).
struct BehindLevel {
    level: usize,
    zone: usize,
    cache: Behind,
}

/// The levels of one line size: their fully associative caches (with the lines seen), each
/// level's set-associative one, and the row counting's state.
struct Class {
    shift: u32,
    stack: Stack,
    /// The levels that keep their own sets; when `behind` has any, the first is the one they
    /// are counted behind.
    levels: Vec<ClassLevel>,
    behind: Vec<BehindLevel>,
    /// Whether a level keeps no ways yet and may have to ([`Sets::admits`]).
    lazy: bool,
    /// How many levels there are in all (each site's counts).
    width: usize,
    scratch: Scratch,
    /// Rows counted per line entered to the end, and rows that stopped (for the tests).
    #[cfg(test)]
    whole: u64,
    #[cfg(test)]
    stops: u64,
    /// Rows that stopped between the first and the last access of an address.
    #[cfg(test)]
    straddled: u64,
    /// Periods replayed.
    #[cfg(test)]
    replayed: u64,
}

/// The row counting's buffers, kept between rows.
#[derive(Default)]
struct Scratch {
    /// Per distinct access of the row ([`Distinct`]), its line at the current cell.
    line: Vec<u32>,
    /// Per cell modulo the period, the accesses that enter a new line there, in order.
    buckets: Vec<Vec<u32>>,
    /// The lines the current cell's accesses left, with the distinct access that left each.
    left: Vec<(u32, u32)>,
    order: Vec<u32>,
    /// Per distinct access, its line at the cell before (where counting stopped).
    then: Vec<u32>,
    /// The lookups and leaves of the row's first period, in order ([`Class::replay`]).
    ops: Vec<PeriodOp>,
}

/// A lookup of line `x` entered by distinct access `e`; or with `e` = [`LEAVES`], line `x`
/// leaving the prefix.
#[derive(Clone, Copy, Debug)]
struct PeriodOp {
    x: u32,
    e: u32,
}

const LEAVES: u32 = u32::MAX;

/// Counts a miss or hit of one level (`first`: the line's first access): whether it hit in
/// both caches.
fn record(c: &mut Counts, first: bool, hit: bool, hit_sa: bool) -> bool {
    if first {
        c.compulsory += 1;
        c.compulsory_sa += 1;
        false
    } else {
        c.capacity += u64::from(!hit);
        c.capacity_sa += u64::from(!hit_sa);
        hit && hit_sa
    }
}

impl Class {
    /// An access to dense line `x`, its misses counted in `counts` (the site's, per level);
    /// `join`: `x` is outside the prefix and joins it. Whether it hit everywhere.
    fn visit(&mut self, x: u32, join: bool, counts: &mut [Counts]) -> bool {
        self.wake(x);
        let first = self.stack.first_access(x);
        let found = if join {
            self.stack.enter(x)
        } else {
            self.stack.touch(x)
        };
        let mut all = true;
        // What the first level evicted, when it missed.
        let mut missed = None;
        for (k, l) in self.levels.iter_mut().enumerate() {
            if first && self.lazy {
                l.sets.admit(x);
            }
            let (hit_sa, evicted) = if join {
                l.sets.enter(x)
            } else {
                l.sets.touch(x)
            };
            if k == 0 && (first || !hit_sa) {
                missed = Some(evicted);
            }
            all &= record(&mut counts[l.level], first, found <= l.zone, hit_sa);
        }
        for b in &mut self.behind {
            if first && self.lazy {
                b.cache.admit(x);
            }
            let hit_sa = missed.is_none_or(|evicted| b.cache.missed(x, first, evicted));
            all &= record(&mut counts[b.level], first, found <= b.zone, hit_sa);
        }
        all
    }

    /// Whether line `x` can join the prefix with every prefix line still hitting everywhere.
    fn has_room(&mut self, x: u32) -> bool {
        self.wake(x);
        self.stack.has_room() && self.levels.iter().all(|l| l.sets.has_room(x))
    }

    /// Before line `x` is accessed: a set-associative level whose set of `x` is full of lines
    /// never evicted starts keeping its ways, from the stack, which holds every line seen
    /// while its largest level has not filled (a level's `sets * ways` lines are at most that).
    #[inline(always)]
    fn wake(&mut self, x: u32) {
        if self.lazy {
            self.wake_lazy(x);
        }
    }

    #[inline(never)]
    fn wake_lazy(&mut self, x: u32) {
        if !self.stack.seen(x) {
            for l in &mut self.levels {
                if !l.sets.admits(x) {
                    l.sets.fill(self.stack.lines(), self.stack.prefix_len());
                }
            }
            // A level behind fills after the first level, which then keeps its ways: a set
            // behind holds lines of one of its sets, at least as many ways.
            for b in &mut self.behind {
                if !b.cache.admits(x) {
                    let f = &self.levels[0].sets;
                    b.cache.fill(self.stack.lines(), |y| f.holds(y));
                }
            }
            self.lazy = self.levels.iter().any(|l| l.sets.lazy())
                || self.behind.iter().any(|b| b.cache.lazy());
        }
    }

    /// Line `x` (taken off the recent ones, [`Class::take_recent`]) leaves the prefix.
    fn leave(&mut self, x: u32) {
        self.stack.leave(x);
        for l in &mut self.levels {
            l.sets.leave(x);
        }
    }

    /// Appends line `x` to `order` if it is recent, and marks it not recent (so that a line
    /// met again is taken once).
    fn take_recent(&mut self, x: u32, order: &mut Vec<u32>) {
        if self.stack.is_recent(x) {
            self.stack.set_recent(x, false);
            order.push(x);
        }
    }

    /// The period of a row's lines, in cells, when it can be counted per line entered: every
    /// access that moves, moves by the same step, which divides the line (so the step and the
    /// period are powers of two, as the line is).
    fn period(&self, rows: &[RowAccess]) -> Option<u64> {
        let line = 1u64 << self.shift;
        let step = rows.iter().map(|r| r.step).filter(|&s| s != 0).max();
        let fits = rows.len() < usize::from(u16::MAX)
            && rows.iter().all(|r| r.step == 0 || Some(r.step) == step);
        match step {
            _ if !fits => None,
            None => Some(1),
            Some(s) if s <= line && line.is_multiple_of(s) => Some(line / s),
            Some(_) => None,
        }
    }
}

impl Class {
    /// The caches of the levels of line `1 << shift` for the `lines` dense lines from
    /// absolute line `first`, empty. With `inclusion`, a level whose sets are a multiple of the
    /// smallest level's, with at least its ways, is counted behind it.
    fn new(
        levels: &[ThreadLevel],
        shift: u32,
        (first, lines): (u64, usize),
        inclusion: bool,
    ) -> Class {
        let mut mine: Vec<(usize, &ThreadLevel)> = levels
            .iter()
            .enumerate()
            .filter(|(_, l)| l.line.trailing_zeros() == shift)
            .collect();
        let mut capacities: Vec<u64> = mine.iter().map(|(_, l)| l.lines()).collect();
        capacities.sort_unstable();
        // Its rank among its class's capacities (equal ones: the first zone of that capacity;
        // the zones between equal capacities hold nothing).
        let zone = |l: &ThreadLevel| capacities.iter().filter(|&&c| c < l.lines()).count();
        // The smallest first: the one the others may be counted behind.
        mine.sort_by_key(|(level, l)| (l.sets * l.ways, *level));
        let (f_sets, f_ways) = (mine[0].1.sets, mine[0].1.ways);
        let (mut own, mut behind) = (Vec::new(), Vec::new());
        for (k, &(level, l)) in mine.iter().enumerate() {
            if inclusion && k > 0 && includes(l.sets, l.ways, f_sets, f_ways) {
                let cache = Behind::new(l.sets, l.ways, first, lines as u64);
                let zone = zone(l);
                behind.push(BehindLevel { level, zone, cache });
            } else {
                let sets = Sets::new(l.sets, l.ways, first, lines as u64);
                let zone = zone(l);
                own.push(ClassLevel { level, zone, sets });
            }
        }
        Class {
            shift,
            lazy: own.iter().any(|l| l.sets.lazy()) || behind.iter().any(|b| b.cache.lazy()),
            stack: Stack::new(&capacities, lines),
            levels: own,
            behind,
            width: levels.len(),
            scratch: Scratch::default(),
            #[cfg(test)]
            whole: 0,
            #[cfg(test)]
            stops: 0,
            #[cfg(test)]
            straddled: 0,
            #[cfg(test)]
            replayed: 0,
        }
    }
}

/// Where a row's counting per line entered stopped: before access `.1` of cell `.0`.
type Stop = (i64, usize);

/// The counts of `site`, per level (`n` of them).
fn site(counts: &mut [Counts], site: u32, n: usize) -> &mut [Counts] {
    &mut counts[site as usize * n..(site as usize + 1) * n]
}

/// The byte offset from `base` of access `a` at cell `i`.
fn offset(a: &RowAccess, i: i64, base: u64) -> u64 {
    a.base
        .wrapping_add((i as u64).wrapping_mul(a.step))
        .wrapping_sub(base)
}

impl Class {
    /// Cells `[lo, hi)` of a row (at each cell, every access of `rows` in order) through this
    /// line size's caches; misses into `counts` (per site and level), offsets from `base`.
    ///
    /// Counted per line entered, which is exact. Call a line recent while an access of the row
    /// is in it, and until the end of the cell at which the last one left it. Every recent
    /// line was accessed at the cell before or at this one; every other line earlier. So in
    /// every recency order (the fully associative list, and each set's) the recent lines come
    /// first, and their order among themselves decides no hit: each cache keeps them all, as
    /// long as there are no more of them than the smallest capacity, and no more in a set than
    /// its ways ([`Class::has_room`]). Hence:
    /// - an access to a recent line hits everywhere and changes no order that matters, so it
    ///   is counted and not looked up;
    /// - an access that enters a line that is not recent is looked up as usual, its line put
    ///   first ([`Stack::enter`], [`Sets::enter`]);
    /// - a line that stops being recent goes right behind the recent ones, lines that stop at
    ///   the same cell in the order of their last accesses ([`Class::leave`]);
    /// - at the end (or when the room runs out, after which the row goes on access by access)
    ///   the recent lines are touched in the order of their last accesses, which leaves every
    ///   cache exactly as the accesses one by one would have ([`Class::settle`]).
    ///
    /// An access moving by `step` enters a new line once per `line / step` cells, at a cell
    /// fixed by its address: each is filed under that cell modulo the period.
    ///
    /// Repeats of an address are folded ([`Distinct`]): the first access of each distinct
    /// address stands for all of them, and the last orders its lines.
    fn row(
        &mut self,
        (rows, distinct): (&[RowAccess], &Distinct),
        (lo, hi): (i64, i64),
        base: u64,
        counts: &mut [Counts],
    ) {
        let Some(period) = self.period(rows) else {
            self.exact(rows, (lo, 0), hi, base, counts);
            return;
        };
        let mut sc = std::mem::take(&mut self.scratch);
        let stop = self.prefix_row((rows, distinct), (lo, hi), base, period, counts, &mut sc);
        #[cfg(test)]
        match stop {
            Some((_, p)) => {
                self.stops += 1;
                let p = p as u32;
                let mut first_last = distinct.first.iter().zip(&distinct.last);
                self.straddled += u64::from(first_last.any(|(&f, &l)| f < p && p <= l));
            }
            None => self.whole += 1,
        }
        if stop.is_none() {
            sc.left.clear();
        }
        self.settle(&mut sc, distinct, stop.map_or(rows.len(), |s| s.1));
        self.scratch = sc;
        if let Some(stop) = stop {
            self.exact(rows, stop, hi, base, counts);
        }
    }

    /// The row counted per line entered, until the room runs out (then where it stopped).
    ///
    /// When every access moves, each moves on by one line a period, and so does every line of
    /// the prefix: the lookups and leaves of a period are those of the period before, each
    /// line one further. The first period is counted and its lookups and leaves recorded; the
    /// whole periods after it replay them ([`Class::replay`]), and the cells left over are
    /// counted again.
    fn prefix_row(
        &mut self,
        (rows, distinct): (&[RowAccess], &Distinct),
        (lo, hi): (i64, i64),
        base: u64,
        period: u64,
        counts: &mut [Counts],
        sc: &mut Scratch,
    ) -> Option<Stop> {
        let n = self.width;
        let first = |e: usize| &rows[distinct.first[e] as usize];
        sc.line.clear();
        sc.left.clear();
        sc.ops.clear();
        sc.buckets.resize_with(period as usize, Vec::new);
        sc.buckets.iter_mut().for_each(Vec::clear);
        for e in 0..distinct.len() {
            let a = first(e);
            let at = offset(a, lo, base);
            let x = (at >> self.shift) as u32;
            sc.line.push(x);
            *self.stack.holders(x) += 1;
            if a.step != 0 {
                // Cells to its next line (the step and the period are powers of two).
                let k = period - ((at >> a.step.trailing_zeros()) & (period - 1));
                sc.buckets[((lo + k as i64) as u64 & (period - 1)) as usize].push(e as u32);
            }
        }
        for e in 0..sc.line.len() {
            let x = sc.line[e];
            if !self.stack.is_recent(x) {
                if !self.has_room(x) {
                    return Some((lo, distinct.first[e] as usize));
                }
                self.visit(x, true, site(counts, first(e).site, n));
                self.stack.set_recent(x, true);
            }
        }
        let p = period as i64;
        // Whether whole periods are replayed after the first: every access moves, and a
        // whole period follows it.
        let replays = rows.iter().all(|r| r.step != 0) && (hi - 1 - lo) / p >= 2;
        let mut i = lo + 1;
        while i < hi {
            let place = (i as u64 & (period - 1)) as usize;
            let record = replays && i - lo <= p;
            if let Some(stop) = self.enter_cell((rows, distinct), i, place, counts, sc, record) {
                return Some(stop);
            }
            if record && i - lo == p {
                // The first period is recorded: whole periods replayed, then the rest.
                i = self.replay((rows, distinct), (lo, hi), period, counts, sc);
            } else {
                i += 1;
            }
        }
        None
    }

    /// Cell `i` (at `place` in the period) counted per line entered: the accesses that enter
    /// their next line there move, a line that is not recent is looked up and joins the
    /// prefix, and the lines no access is in any more leave. With `record`, its lookups and
    /// leaves are recorded in `ops`.
    fn enter_cell(
        &mut self,
        (rows, distinct): (&[RowAccess], &Distinct),
        i: i64,
        place: usize,
        counts: &mut [Counts],
        sc: &mut Scratch,
        record: bool,
    ) -> Option<Stop> {
        let n = self.width;
        let Scratch {
            line,
            buckets,
            left,
            order,
            ops,
            ..
        } = sc;
        let bucket = &buckets[place];
        if bucket.is_empty() {
            return None;
        }
        left.clear();
        for &e in bucket {
            let e = e as usize;
            let (old, new) = (line[e], line[e] + 1);
            if !self.stack.is_recent(new) {
                if !self.has_room(new) {
                    return Some((i, distinct.first[e] as usize));
                }
                let a = &rows[distinct.first[e] as usize];
                self.visit(new, true, site(counts, a.site, n));
                self.stack.set_recent(new, true);
                if record {
                    ops.push(PeriodOp {
                        x: new,
                        e: e as u32,
                    });
                }
            }
            line[e] = new;
            *self.stack.holders(old) -= 1;
            *self.stack.holders(new) += 1;
            left.push((old, e as u32));
        }
        // The lines no access is in any more leave, the least recently accessed first: in
        // the order of the last accesses that were in them.
        distinct.by_last_access(left);
        order.clear();
        for &(x, _) in left.iter().rev() {
            if *self.stack.holders(x) == 0 {
                self.take_recent(x, order);
            }
        }
        for &x in order.iter().rev() {
            self.leave(x);
            if record {
                ops.push(PeriodOp { x, e: LEAVES });
            }
        }
        None
    }

    /// After the row's first period (cells `lo + 1 ..= lo + period`, recorded in `ops`), the
    /// whole periods that fit before `hi` by the recorded lookups and leaves, each line one
    /// further a period: the next cell to count. Exact: with every access moving on by one line
    /// a period, the lines entered and left, recent or not, and their order repeat, one line
    /// further; the lookups go through the caches as the cells counted one by one would.
    ///
    /// The room never runs out in a replayed period when it did not in the first. The fully
    /// associative list's prefix has the same length a period later. A set-associative level
    /// that keeps its ways has the same number of prefix lines in the set of a line as it had
    /// in the set of that line's counterpart a period before (every line one further, every set
    /// one further). One that kept no ways in the first period held every line seen, at most its
    /// ways in a set, so the prefix lines in a set, with the line entering it, were never more
    /// than its ways there; they are as many now.
    fn replay(
        &mut self,
        (rows, distinct): (&[RowAccess], &Distinct),
        (lo, hi): (i64, i64),
        period: u64,
        counts: &mut [Counts],
        sc: &mut Scratch,
    ) -> i64 {
        let (n, p) = (self.width, period as i64);
        // Period m covers cells lo + m p + 1 ..= lo + (m + 1) p; the last ends before hi.
        let periods = (hi - 1 - lo) / p - 1;
        for m in 1..=periods {
            #[cfg(test)]
            {
                self.replayed += 1;
            }
            for k in 0..sc.ops.len() {
                let op = sc.ops[k];
                let x = op.x + m as u32;
                if op.e == LEAVES {
                    self.stack.set_recent(x, false);
                    self.leave(x);
                    continue;
                }
                debug_assert!(self.has_room(x), "the room ran out in a replayed period");
                let a = &rows[distinct.first[op.e as usize] as usize];
                self.visit(x, true, site(counts, a.site, n));
                self.stack.set_recent(x, true);
            }
        }
        // Each access's line, and the counts of accesses in the lines, as the cells counted one
        // by one leave them: `periods` lines on from the end of the first period.
        for &x in &sc.line {
            *self.stack.holders(x) = 0;
        }
        for x in sc.line.iter_mut() {
            *x += periods as u32;
        }
        for &x in &sc.line {
            *self.stack.holders(x) += 1;
        }
        lo + (periods + 1) * p + 1
    }

    /// Ends the prefix when counting stopped before access `p` of the current cell: the recent
    /// lines touched in the order of their last accesses, oldest first. Newest first, they are
    /// the lines of this cell's accesses before `p`, then those of the cell before: an access
    /// from `p` on is still in its line of then, one before `p` that entered a new line here
    /// left the one it had (`left`).
    ///
    /// `line` and `left` are per distinct access ([`Distinct`]): an access is in its distinct
    /// access's line, and one from `p` on whose distinct access moved at this cell (it is in
    /// `left`) was last in the line that one left.
    fn settle(&mut self, sc: &mut Scratch, distinct: &Distinct, p: usize) {
        let Scratch {
            line,
            left,
            order,
            then,
            ..
        } = sc;
        distinct.by_last_access(left);
        then.clear();
        then.extend_from_slice(line);
        for &(x, e) in left.iter() {
            then[e as usize] = x;
        }
        order.clear();
        let of = &distinct.of;
        let now = of[..p].iter().rev().map(|&e| line[e as usize]);
        let before = of[p..].iter().rev().map(|&e| then[e as usize]);
        for x in now.chain(before).chain(left.iter().rev().map(|&(x, _)| x)) {
            self.take_recent(x, order);
        }
        for &x in order.iter().rev() {
            self.stack.touch(x);
            for l in &mut self.levels {
                l.sets.settle(x);
            }
        }
        self.stack.end_prefix();
        for &x in line.iter().chain(left.iter().map(|(x, _)| x)) {
            *self.stack.holders(x) = 0;
        }
        left.clear();
    }

    /// Cells `[from.0, hi)` access by access, from access `from.1` of the first. A cell whose
    /// accesses all stay in their lines of the cell before, after a cell at which every
    /// access hit everywhere, is a repeat: the same lines in the same order, all held (none
    /// was evicted while they all hit), so they hit again and leave every order as it was.
    fn exact(&mut self, rows: &[RowAccess], from: Stop, hi: i64, base: u64, counts: &mut [Counts]) {
        let (n, line) = (self.width, 1u64 << self.shift);
        let mut stable = false;
        for i in from.0..hi {
            if stable
                && rows
                    .iter()
                    .all(|r| r.step == 0 || offset(r, i, base) & (line - 1) >= r.step)
            {
                continue;
            }
            let skip = if i == from.0 { from.1 } else { 0 };
            let mut all = skip == 0;
            for a in &rows[skip..] {
                let x = (offset(a, i, base) >> self.shift) as u32;
                all &= self.visit(x, false, site(counts, a.site, n));
            }
            stable = all;
        }
    }
}

/// One thread's caches, every level, and its counts per site and level.
pub struct Counter {
    classes: Vec<Class>,
    /// Address of dense line 0 (the layout's first allocation).
    base: u64,
    levels: usize,
    foldings: Foldings,
    /// `counts[site * levels + level]`.
    pub counts: Vec<Counts>,
}

impl Counter {
    /// Empty caches for addresses in `[base, end)` and `sites` access sites.
    pub fn new(levels: &[ThreadLevel], base: u64, end: u64, sites: usize) -> Counter {
        Counter::counting(levels, (base, end), sites, true)
    }

    /// As [`Counter::new`]; `inclusion`: count the levels that include a smaller one of their
    /// line size behind it ([`crate::behind`]), else every level by its own sets.
    fn counting(
        levels: &[ThreadLevel],
        (base, end): (u64, u64),
        sites: usize,
        inclusion: bool,
    ) -> Counter {
        let mut shifts: Vec<u32> = levels.iter().map(|l| l.line.trailing_zeros()).collect();
        shifts.sort_unstable();
        shifts.dedup();
        let classes = shifts
            .iter()
            .map(|&shift| {
                let lines = ((end - base) >> shift) as usize + 1;
                Class::new(levels, shift, (base >> shift, lines), inclusion)
            })
            .collect();
        Counter {
            classes,
            base,
            levels: levels.len(),
            foldings: Foldings::default(),
            counts: vec![Counts::default(); sites * levels.len()],
        }
    }

    /// Adds every access of the row to its site's counts at every level.
    fn count_accesses(&mut self, rows: &[RowAccess], cells: u64) {
        for r in rows {
            for c in site(&mut self.counts, r.site, self.levels) {
                c.accesses += cells;
            }
        }
    }
}

impl Sink for Counter {
    fn row(&mut self, rows: &[RowAccess], lo: i64, hi: i64) {
        if hi <= lo {
            return;
        }
        self.count_accesses(rows, (hi - lo) as u64);
        let distinct = self.foldings.of(rows);
        for class in &mut self.classes {
            class.row((rows, distinct), (lo, hi), self.base, &mut self.counts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use absinthe_model::support::rng::Rng;

    /// Plain LRU caches, access by access, written apart from [`Stack`] and [`Sets`]:
    /// per level one list of lines, most recent first, and one per set.
    struct Plain {
        levels: Vec<ThreadLevel>,
        full: Vec<Vec<u64>>,
        sets: Vec<Vec<Vec<u64>>>,
        seen: Vec<std::collections::HashSet<u64>>,
        counts: Vec<Counts>,
    }

    /// Accesses `x` in the list (most recent first) of `ways` lines: whether it hit.
    fn lru(list: &mut Vec<u64>, x: u64, ways: u64) -> bool {
        let hit = list.iter().position(|&y| y == x).map(|at| list.remove(at));
        list.insert(0, x);
        list.truncate(ways as usize);
        hit.is_some()
    }

    impl Plain {
        fn new(levels: &[ThreadLevel], sites: usize) -> Plain {
            Plain {
                levels: levels.to_vec(),
                full: vec![Vec::new(); levels.len()],
                sets: levels
                    .iter()
                    .map(|l| vec![Vec::new(); l.sets as usize])
                    .collect(),
                seen: vec![Default::default(); levels.len()],
                counts: vec![Counts::default(); sites * levels.len()],
            }
        }

        fn row(&mut self, rows: &[RowAccess], lo: i64, hi: i64) {
            let n = self.levels.len();
            for i in lo..hi {
                for a in rows {
                    let address = a.base.wrapping_add((i as u64).wrapping_mul(a.step));
                    for (k, l) in self.levels.iter().enumerate() {
                        let x = address / l.line;
                        let c = &mut self.counts[a.site as usize * n + k];
                        c.accesses += 1;
                        let hit = lru(&mut self.full[k], x, l.lines());
                        let hit_sa = lru(&mut self.sets[k][(x % l.sets) as usize], x, l.ways);
                        record(c, self.seen[k].insert(x), hit, hit_sa);
                    }
                }
            }
        }
    }

    /// Random rows (moving and standing accesses, several to a line, in a few KiB so that
    /// lines come back) through random levels of one or two line sizes, counted per line
    /// entered, access by access, and by plain LRU lists: every count equal, row after row, so
    /// the caches each way leaves behind decide the same hits too. Small caches make the
    /// counting stop and go on access by access; large ones keep it per line entered
    /// throughout; a row with an access of another step goes access by access. Half the
    /// seeds' levels are chains like real ones, each with a multiple of the sets and at least
    /// the ways of the one before.
    #[test]
    fn counting_per_line_entered_equals_counting_access_by_access() {
        let (mut stopped, mut whole, mut straddled, mut reused) = (0, 0, 0, 0);
        // Levels counted behind another, and those of them that came to evict.
        let (mut behind, mut keeping) = (0, 0);
        let mut replayed = 0;
        for seed in 0..400u64 {
            let mut rng = Rng::new(seed);
            let lines = [32u64, 64, 128];
            let line = *rng.pick(&lines);
            let chain = seed % 4 < 2;
            let (mut sets, mut ways) = (1u64 << rng.range(0, 2), rng.range(1, 4) as u64);
            let levels: Vec<ThreadLevel> = (0..rng.range(1, 3))
                .map(|n| {
                    let line = if !chain && rng.chance(25) {
                        line * 2
                    } else {
                        line
                    };
                    if chain {
                        sets *= rng.range(1, 3) as u64;
                        ways += rng.range(0, 3) as u64;
                    } else {
                        ways = rng.range(1, 8) as u64;
                        sets = if seed % 2 == 0 {
                            1 << rng.range(0, 5)
                        } else {
                            rng.range(1, 40) as u64
                        };
                    }
                    ThreadLevel {
                        name: format!("L{n}"),
                        bytes: sets * ways * line,
                        line,
                        ways,
                        sets,
                        shared: false,
                    }
                })
                .collect();
            let (base, span) = (1u64 << 21, 8192u64);
            let sites = 16;
            let mut fast = Counter::new(&levels, base, base + span, sites);
            let mut slow = Counter::counting(&levels, (base, base + span), sites, false);
            let mut plain = Plain::new(&levels, sites);
            // The last row made afresh, and its first cell.
            let mut last: (Vec<RowAccess>, i64) = (Vec::new(), 0);
            for _ in 0..30 {
                let (rows, lo, hi) = random_row(&mut rng, (base, span), sites, &mut last);
                fast.row(&rows, lo, hi);
                plain.row(&rows, lo, hi);
                slow.count_accesses(&rows, (hi - lo).max(0) as u64);
                for class in &mut slow.classes {
                    class.exact(&rows, (lo, 0), hi, base, &mut slow.counts);
                }
                let ended = fast
                    .classes
                    .iter()
                    .all(|c| c.stack.prefix_len() == 0 && c.stack.marks_clear());
                assert!(ended, "seed {seed}: a prefix left open");
                assert_eq!(fast.counts, slow.counts, "seed {seed}, levels {levels:?}");
                assert_eq!(fast.counts, plain.counts, "seed {seed}, levels {levels:?}");
            }
            for class in &fast.classes {
                stopped += class.stops;
                whole += class.whole;
                straddled += class.straddled;
                behind += class.behind.len();
                replayed += class.replayed;
                keeping += class.behind.iter().filter(|b| b.cache.keeps()).count();
            }
            reused += fast.foldings.reused;
        }
        assert!(
            stopped > 500 && whole > 500 && straddled > 500 && reused > 500 && behind > 150 && keeping > 120 && replayed > 10000,
            "{stopped} rows stopped ({straddled} between the first and last access of an \
             address), {whole} whole, {reused} foldings reused, {behind} levels behind another ({keeping} evicting), {replayed} periods replayed"
        );
    }

    /// A random row in `span` bytes from `base` (moving and standing accesses, several to a
    /// line, repeats of an address, now and then a step of its own) and its cells; now and then
    /// the last fresh row (`last`, with its first cell) moved along, whose folding is reused.
    fn random_row(
        rng: &mut Rng,
        (base, span): (u64, u64),
        sites: usize,
        last: &mut (Vec<RowAccess>, i64),
    ) -> (Vec<RowAccess>, i64, i64) {
        let (lo, len) = (rng.range(-3, 3), rng.range(0, 70));
        let vb = if rng.chance(20) { 4 } else { 8 };
        if !last.0.is_empty() && rng.chance(25) {
            // The same shape and first site; the other sites anew.
            let by = rng.range(0, 8) as u64 * vb;
            let mut rows = last.0.clone();
            for r in rows.iter_mut() {
                r.base = r.base.wrapping_add(by);
            }
            for r in rows.iter_mut().skip(1) {
                r.site = rng.below(sites) as u32;
            }
            return (rows, last.1, last.1 + len);
        }
        let mut rows: Vec<RowAccess> = Vec::new();
        for _ in 0..rng.range(1, 14) {
            let site = rng.below(sites) as u32;
            // Now and then the address of an earlier access (a repeat, folded).
            if !rows.is_empty() && rng.chance(30) {
                let earlier = rows[rng.below(rows.len())];
                rows.push(RowAccess { site, ..earlier });
                continue;
            }
            // Now and then a step of its own: the row goes access by access.
            let step = match rng.below(40) {
                0..=5 => 0,
                6 => 3 * vb,
                _ => vb,
            };
            let start = rng.range(0, (span - 240 * vb) as i64) as u64 / vb * vb;
            rows.push(RowAccess {
                base: (base + start).wrapping_sub((lo as u64).wrapping_mul(step)),
                site,
                step,
            });
        }
        *last = (rows.clone(), lo);
        (rows, lo, lo + len)
    }
}
