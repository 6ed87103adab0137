//! Which of the dimensions i, j, k an array has (`fields:` in a program file): 3-D arrays have
//! all three, a 2-D field such as an orography `[i, j]`, a 1-D one such as level heights `[k]`.

use std::fmt;

use super::INDEX_NAMES;

/// The dimensions an array has, among (i, j, k); an access to it lists exactly these indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dims(pub [bool; 3]);

impl Default for Dims {
    fn default() -> Self {
        Dims::ALL
    }
}

impl Dims {
    /// `[i, j, k]`: an ordinary 3-D array.
    pub const ALL: Dims = Dims([true; 3]);

    /// Whether dimension `d` (0 = i, 1 = j, 2 = k) is one of them.
    pub fn has(self, d: usize) -> bool {
        self.0[d]
    }

    /// All three.
    pub fn is_full(self) -> bool {
        self == Dims::ALL
    }

    /// Their index names in order: `["i", "j"]`.
    pub fn names(self) -> Vec<&'static str> {
        (0..3)
            .filter(|&d| self.0[d])
            .map(|d| INDEX_NAMES[d])
            .collect()
    }

    /// `extent` where the dimension is present, 1 where it is not.
    pub fn extents(self, extent: [usize; 3]) -> [usize; 3] {
        [0, 1, 2].map(|d| if self.0[d] { extent[d] } else { 1 })
    }

    /// `at` with the absent dimensions' coordinates set to 0: where a field's value for the 3-D
    /// point `at` is stored.
    pub fn project(self, at: [i64; 3]) -> [i64; 3] {
        [0, 1, 2].map(|d| if self.0[d] { at[d] } else { 0 })
    }
}

/// `[i, j]`
impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.names().join(", "))
    }
}
