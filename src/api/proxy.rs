//! Which proxy, if any, a request goes through: curl's and reqwest's environment rules
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, upper or lower case) as hyper-util's
//! [`Matcher`] implements them, with the credentials of a proxy URL (`http://user:pass@host:port`)
//! turned into a `Proxy-Authorization: Basic` value.
//!
//! Nothing here is hand-written but the wrapper: the rules are hyper-util's, the CONNECT tunnel is
//! hyper-util's `Tunnel` ([`super::transport`]). The wrapper exists so that a proxy's credentials
//! can never reach a log or an error: [`Proxy`] prints its address only, and its
//! `Proxy-Authorization` value is marked sensitive.

use std::sync::Arc;

use http::{HeaderValue, Uri};
use hyper_util::client::proxy::matcher::Matcher;

/// The proxy rules of a client.
#[derive(Clone)]
pub struct Proxies {
    matcher: Option<Arc<Matcher>>,
}

impl std::fmt::Debug for Proxies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Matcher's own Debug shows proxy addresses without their credentials.
        match &self.matcher {
            Some(m) => write!(f, "{m:?}"),
            None => f.write_str("no proxy"),
        }
    }
}

impl Default for Proxies {
    fn default() -> Self {
        Proxies::from_env()
    }
}

impl Proxies {
    /// The rules the environment sets (empty when no proxy variable is set). Like curl,
    /// `HTTP_PROXY` is ignored when `REQUEST_METHOD` says this runs as a CGI script.
    pub fn from_env() -> Proxies {
        Proxies {
            matcher: Some(Arc::new(Matcher::from_env())),
        }
    }

    /// Never a proxy, whatever the environment says.
    pub fn none() -> Proxies {
        Proxies { matcher: None }
    }

    /// Explicit rules, with the meaning of the environment variables of the same names.
    pub fn from_rules(all: &str, http: &str, https: &str, no: &str) -> Proxies {
        let matcher = Matcher::builder()
            .all(all.to_string())
            .http(http.to_string())
            .https(https.to_string())
            .no(no.to_string())
            .build();
        Proxies {
            matcher: Some(Arc::new(matcher)),
        }
    }

    /// The proxy for requests to `target` (`http` or `https` URL), if one applies.
    pub(crate) fn for_target(&self, target: &Uri) -> Result<Option<Proxy>, String> {
        let Some(intercept) = self.matcher.as_ref().and_then(|m| m.intercept(target)) else {
            return Ok(None);
        };
        let uri = intercept.uri().clone();
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => {
                return Err(format!(
                    "the proxy for {target} is a {other}:// proxy ({}); only http:// proxies are supported",
                    redacted(&uri)
                ))
            }
            None => return Err(format!("the proxy for {target} has no scheme")),
        }
        let mut auth = intercept.basic_auth().cloned();
        if let Some(auth) = auth.as_mut() {
            auth.set_sensitive(true);
        }
        Ok(Some(Proxy { uri, auth }))
    }
}

/// `scheme://host:port` of a proxy URI (a [`Matcher`] already keeps credentials out of it).
fn redacted(uri: &Uri) -> String {
    let host = uri
        .authority()
        .map(|a| a.as_str().rsplit_once('@').map_or(a.as_str(), |(_, h)| h))
        .unwrap_or_default();
    format!("{}://{host}", uri.scheme_str().unwrap_or("http"))
}

/// One proxy: where it is and, if the URL had credentials, the `Proxy-Authorization` value.
#[derive(Clone)]
pub(crate) struct Proxy {
    /// `http://host:port/`, no credentials.
    pub uri: Uri,
    /// `Basic …`, sensitive: never printed.
    pub auth: Option<HeaderValue>,
}

impl Proxy {
    /// What logs and errors may say about this proxy: its address.
    pub fn address(&self) -> String {
        redacted(&self.uri)
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("uri", &self.address())
            .field("auth", &self.auth.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl std::fmt::Display for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.address())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_pick_the_proxy_by_scheme_and_no_proxy_and_never_print_credentials() {
        let proxies = Proxies::from_rules(
            "",
            "http://plain:8080",
            "http://alice:s3cr%20t@tunnel.example:3128",
            "localhost,.internal",
        );
        let https: Uri = "https://openrouter.ai/api/v1".parse().unwrap();
        let proxy = proxies.for_target(&https).unwrap().unwrap();
        assert_eq!(proxy.address(), "http://tunnel.example:3128");
        // base64("alice:s3cr t")
        assert_eq!(
            proxy.auth.as_ref().unwrap().to_str().unwrap(),
            "Basic YWxpY2U6czNjciB0"
        );
        for shown in [
            format!("{proxy:?}"),
            proxy.to_string(),
            format!("{proxies:?}"),
        ] {
            assert!(
                !shown.contains("s3cr") && !shown.contains("alice"),
                "{shown}"
            );
            assert!(!shown.contains("YWxp"), "{shown}");
        }
        let http: Uri = "http://gpu-box:8000/v1".parse().unwrap();
        assert_eq!(
            proxies.for_target(&http).unwrap().unwrap().address(),
            "http://plain:8080"
        );
        for bypassed in ["http://localhost:8000/v1", "https://api.internal/v1"] {
            let uri: Uri = bypassed.parse().unwrap();
            assert!(proxies.for_target(&uri).unwrap().is_none(), "{bypassed}");
        }
        assert!(Proxies::none().for_target(&https).unwrap().is_none());

        let all = Proxies::from_rules("socks5://127.0.0.1:1080", "", "", "");
        let err = all.for_target(&https).unwrap_err();
        assert!(err.contains("only http:// proxies"), "{err}");
    }
}
