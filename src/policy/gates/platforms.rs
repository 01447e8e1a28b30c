//! `spec.platforms`: the image provides every listed platform.

use super::{Fact, Facts, Gate, Hold, Judgement, Missing, Need, Platform};

/// The platforms a candidate's image must provide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platforms(Vec<Platform>);

impl Platforms {
    pub fn new(required: Vec<Platform>) -> Platforms {
        Platforms(required)
    }
}

impl Gate for Platforms {
    fn name(&self) -> &'static str {
        "platforms"
    }

    fn describe(&self) -> String {
        let list: Vec<String> = self.0.iter().map(Platform::to_string).collect();
        format!("platforms {}", list.join(","))
    }

    fn needs(&self) -> Need {
        Need::of([Fact::Image])
    }

    fn order(&self) -> u8 {
        0
    }

    fn judge(&self, facts: &Facts<'_>) -> Result<Judgement, Missing> {
        let image = facts.image()?;
        let offered: Vec<&Platform> = image.platforms.iter().map(|(p, _)| p).collect();
        let missing: Vec<String> = self
            .0
            .iter()
            .filter(|wanted| !offered.iter().any(|o| wanted.served_by(o)))
            .map(Platform::to_string)
            .collect();
        if missing.is_empty() {
            return Ok(Judgement::Pass);
        }
        let has = match offered.is_empty() {
            true => "none named".to_string(),
            false => {
                let names: Vec<String> = offered.iter().map(|p| p.to_string()).collect();
                names.join(", ")
            }
        };
        Ok(Judgement::Hold(Hold {
            gate: self.name(),
            reason: format!("missing {} (has {has})", missing.join(", ")),
            eligible_at: None,
        }))
    }
}
