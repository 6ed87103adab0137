//! The repeats of an address in a row, folded: a fused loop reads one address from several
//! stencils (a field at the same offset), and every access after the first of its address in
//! a cell finds the line that one made recent. The counting looks up only the first of each
//! address ([`Distinct::first`]) and orders lines by the last ([`Distinct::last`]).

use crate::walk::RowAccess;

/// A row's accesses with the repeats of one address folded into one: the distinct (address,
/// step) pairs in the order of their first accesses. A repeat is always in the line its first
/// access is in, which that access made recent, so only the first is looked up; the last
/// decides the order of the line's last access.
#[derive(Default)]
pub struct Distinct {
    /// The row they were found for, as each access's (offset from the first's address, step):
    /// a row of the same shape has the same repeats.
    shape: Vec<(u64, u64)>,
    /// The first access's site, to find the folding of a row's loop among those kept.
    site: u32,
    /// Per distinct access, the index in the row of its first and of its last access.
    pub first: Vec<u32>,
    pub last: Vec<u32>,
    /// Per access of the row, its distinct access.
    pub of: Vec<u32>,
}

/// The foldings of the last rows' shapes (the row loops of a group take turns).
#[derive(Default)]
pub struct Foldings {
    kept: Vec<Distinct>,
    /// The one to replace next, once all are kept.
    next: usize,
    /// Scratch: the row's indices by address.
    sorted: Vec<u32>,
    /// Rows whose folding was a kept one.
    #[cfg(test)]
    pub reused: u64,
}

/// How many foldings are kept: more than the row loops of most groups.
const FOLDINGS: usize = 16;

impl Foldings {
    /// The folding of `rows`: a kept one of the same shape, else found anew.
    pub fn of(&mut self, rows: &[RowAccess]) -> &Distinct {
        let origin = rows.first().map_or(0, |r| r.base);
        let shape = || rows.iter().map(|r| (r.base.wrapping_sub(origin), r.step));
        let site = rows.first().map_or(0, |r| r.site);
        let known = self.kept.iter().position(|d| {
            d.site == site && d.shape.len() == rows.len() && d.shape.iter().copied().eq(shape())
        });
        if let Some(k) = known {
            #[cfg(test)]
            {
                self.reused += 1;
            }
            return &self.kept[k];
        }
        let k = if self.kept.len() < FOLDINGS {
            self.kept.push(Distinct::default());
            self.kept.len() - 1
        } else {
            let k = self.next;
            self.next = (k + 1) % FOLDINGS;
            k
        };
        let d = &mut self.kept[k];
        d.site = site;
        d.shape.clear();
        d.shape.extend(shape());
        d.fold(&mut self.sorted);
        d
    }
}

impl Distinct {
    /// Finds the distinct accesses of the row of shape `self.shape`.
    fn fold(&mut self, sorted: &mut Vec<u32>) {
        let n = self.shape.len();
        let key = |q: u32| self.shape[q as usize];
        sorted.clear();
        sorted.extend(0..n as u32);
        // Stable: among equal addresses, the first access comes first.
        sorted.sort_by_key(|&q| key(q));
        // Each access's leader (the first of its address), kept in `of` for now.
        self.of.clear();
        self.of.resize(n, 0);
        for (m, &q) in sorted.iter().enumerate() {
            self.of[q as usize] = if m > 0 && key(sorted[m - 1]) == key(q) {
                self.of[sorted[m - 1] as usize]
            } else {
                q
            };
        }
        // Then the leaders in row order name the distinct accesses.
        self.first.clear();
        self.last.clear();
        for q in 0..n {
            let leader = self.of[q] as usize;
            if leader == q {
                self.of[q] = self.first.len() as u32;
                self.first.push(q as u32);
                self.last.push(q as u32);
            } else {
                let e = self.of[leader];
                self.of[q] = e;
                self.last[e as usize] = q as u32;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// Orders `left` (lines left, each with the distinct access that left it) by the last access
    /// of each distinct access, as its lines were last accessed in that order.
    pub fn by_last_access(&self, left: &mut [(u32, u32)]) {
        let last = |&(_, e): &(u32, u32)| self.last[e as usize];
        if !left.is_sorted_by_key(last) {
            left.sort_unstable_by_key(last);
        }
    }
}
