//! [`EndpointPool`]: picks the endpoint for each attempt, in proportion to the endpoints' weights.
//!
//! The choice is per attempt, not per prompt, so a retry may go to another endpoint — which is
//! what one wants when one endpoint is the cause of the failure.

use rand::Rng;

use crate::api::BodyFields;
use crate::config::ResolvedEndpoint;

/// The run's endpoints with their cumulative weights, and each one's request body fields (built
/// once, not per request).
#[derive(Debug)]
pub struct EndpointPool {
    endpoints: Vec<ResolvedEndpoint>,
    bodies: Vec<BodyFields>,
    cumulative: Vec<u64>,
}

impl EndpointPool {
    /// `endpoints` must not be empty (config validation guarantees it); zero weights count as one.
    pub fn new(endpoints: Vec<ResolvedEndpoint>) -> EndpointPool {
        let mut total = 0u64;
        let cumulative = endpoints
            .iter()
            .map(|e| {
                total += u64::from(e.endpoint.weight.max(1));
                total
            })
            .collect();
        let bodies = endpoints
            .iter()
            .map(|e| BodyFields::new(&e.options))
            .collect();
        EndpointPool {
            endpoints,
            bodies,
            cumulative,
        }
    }

    pub fn all(&self) -> &[ResolvedEndpoint] {
        &self.endpoints
    }

    /// A weighted random endpoint and its body fields.
    pub fn choose(&self, rng: &mut impl Rng) -> Option<(&ResolvedEndpoint, &BodyFields)> {
        self.choose_indexed(rng).map(|(_, e, b)| (e, b))
    }

    /// [`EndpointPool::choose`] with the endpoint's index in [`EndpointPool::all`].
    pub fn choose_indexed(
        &self,
        rng: &mut impl Rng,
    ) -> Option<(usize, &ResolvedEndpoint, &BodyFields)> {
        let total = *self.cumulative.last()?;
        let x = rng.random_range(0..total);
        let i = self.cumulative.partition_point(|&c| c <= x);
        Some((i, self.endpoints.get(i)?, self.bodies.get(i)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ServerKind;
    use crate::config::{EndpointConfig, RunConfig};

    #[test]
    fn choice_follows_weights() {
        let mut config = RunConfig::default();
        let mut a = EndpointConfig::new("a", "http://a/v1", ServerKind::Generic);
        a.weight = 3;
        let b = EndpointConfig::new("b", "http://b/v1", ServerKind::Generic);
        config.endpoints = vec![a, b];
        let pool = EndpointPool::new(config.resolve_endpoints(|_| None).unwrap());
        let mut rng = rand::rng();
        let n = 40_000;
        let a_count = (0..n)
            .filter(|_| pool.choose(&mut rng).unwrap().0.endpoint.name == "a")
            .count();
        let share = a_count as f64 / n as f64;
        assert!((share - 0.75).abs() < 0.02, "share of a = {share}");
        assert!(EndpointPool::new(Vec::new()).choose(&mut rng).is_none());
    }
}
