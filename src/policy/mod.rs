//! Tag selection: which tag is the latest, by `semver`, `alphabetical` or `numerical`, after an
//! optional `filterTags` regex with `extract` (docs/policy.md, docs/compatibility.md).
//!
//! Pure: no Kubernetes, no HTTP, no async. The result never depends on the input order of the
//! same set of tags: ties are broken by the original tag, as Flux's own election breaks them
//! on the store's descending byte order (see `docs/policy.md`).

mod best;
mod bump;
pub mod conditions;
mod constraint;
mod error;
mod filter;
mod gates;
mod goregex;
mod linear;
mod newest;
mod numeric;
mod regex;
mod select;
mod template;
mod version;

pub use best::Order;
pub use bump::{bump, Bump, Bumps};
pub use constraint::Constraints;
pub use error::{InvalidPolicy, NotElected, MAX_RANGE_BYTES};
pub use filter::{only_tag, Filter};
pub use gates::{
    gate, instant, Age, ByBump, Fact, Facts, Gate, Gates, Hold, ImageView, Judgement, MinAge,
    Missing, Need, Passed, Platform, Platforms, Ruling, SignatureView, SignedClock, Undated,
    Verify, MAX_MIN_AGE, MAX_PLATFORMS, MAX_PLATFORM_LEN,
};
pub use goregex::{translate as translate_go_regex, GoError, Translated};
pub use newest::{Sightings, MAX_DATED};
pub use numeric::Number;
pub use regex::{compile_exclusions, compile_go, Exclusions, GoRegex, REGEX_SIZE_LIMIT};
pub use select::{Candidate, Explanation, FilterSpec, Policy, PolicyChoice, PolicyKind};
pub use version::Version;
