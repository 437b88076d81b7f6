//! The text `train_transformer` learns: Herman Melville's *Moby-Dick*
//! (public domain, see `examples/data/README.md`) as a sequence of
//! character ids, split into training and held-out parts, cut into windows.

use std::io::Read;

/// Where the text lives in the source tree.
pub const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/moby-dick.txt.gz");

/// Reads and decompresses [`PATH`].
///
/// ```
/// let text = opforge_examples::text::load()?;
/// assert!(text.len() > 1_000_000 && text.starts_with("CHAPTER 1. Loomings."));
/// # Ok::<(), String>(())
/// ```
pub fn load() -> Result<String, String> {
    let file = std::fs::File::open(PATH).map_err(|e| format!("cannot open {PATH}: {e}"))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).map_err(|e| format!("cannot read {PATH}: {e}"))?;
    Ok(text)
}

/// The characters of a text, each with an id: its rank in sorted order.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    chars: Vec<char>,
}

impl Vocabulary {
    /// Every distinct character of `text`.
    ///
    /// ```
    /// let v = opforge_examples::text::Vocabulary::of("banana");
    /// assert_eq!((v.len(), v.encode("nab")?), (3, vec![2, 0, 1]));
    /// assert_eq!(v.decode(&[1, 0, 2]), "ban");
    /// assert!(v.encode("x").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn of(text: &str) -> Vocabulary {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        Vocabulary { chars }
    }

    /// Number of characters.
    ///
    /// ```
    /// assert_eq!(opforge_examples::text::Vocabulary::of("abca").len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Whether the vocabulary is empty.
    ///
    /// ```
    /// assert!(opforge_examples::text::Vocabulary::of("").is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// The ids of `text`'s characters; a character outside the vocabulary is an error.
    ///
    /// ```
    /// let v = opforge_examples::text::Vocabulary::of("ab");
    /// assert_eq!(v.encode("ba")?, vec![1, 0]);
    /// assert!(v.encode("c").unwrap_err().contains("'c'"));
    /// # Ok::<(), String>(())
    /// ```
    pub fn encode(&self, text: &str) -> Result<Vec<i32>, String> {
        text.chars()
            .map(|c| {
                self.chars.binary_search(&c).map(|i| i as i32).map_err(|_| format!("{c:?} is not in the vocabulary"))
            })
            .collect()
    }

    /// The characters of `ids`; an id outside the vocabulary becomes `?`.
    ///
    /// ```
    /// let v = opforge_examples::text::Vocabulary::of("ab");
    /// assert_eq!(v.decode(&[1, 0, 7, -1]), "ba??");
    /// ```
    pub fn decode(&self, ids: &[i32]) -> String {
        ids.iter().map(|&i| usize::try_from(i).ok().and_then(|i| self.chars.get(i)).copied().unwrap_or('?')).collect()
    }
}

/// The starts of the windows of `window` ids that one epoch over `len` ids
/// reads: every `window`-th position from a phase drawn from `seed` (so
/// epochs cut the text at different places), in a seeded order. Windows do
/// not overlap and each fits in `len`.
///
/// ```
/// let starts = opforge_examples::text::window_starts(100, 10, 3);
/// assert!(starts.len() >= 9 && starts.iter().all(|s| s + 10 <= 100));
/// let mut sorted = starts.clone();
/// sorted.sort();
/// assert!(sorted.windows(2).all(|w| w[1] - w[0] == 10));
/// assert_ne!(starts, sorted, "shuffled");
/// ```
pub fn window_starts(len: usize, window: usize, seed: u64) -> Vec<usize> {
    let window = window.max(1);
    if len < window {
        return Vec::new();
    }
    let phase = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) as usize % window;
    let phase = if phase + window > len { 0 } else { phase };
    let starts: Vec<usize> = (phase..=len - window).step_by(window).collect();
    crate::digits::shuffled(starts.len(), seed).into_iter().map(|i| starts[i]).collect()
}
