//! Reading the vLLM Router's own Prometheus page (`--router-metrics-url`)
//! at a run's start and end; what the page means is
//! `codendum_core::prom::router_page`'s.

use codendum_core::prom::parse::parse;
use codendum_core::prom::router_page::{router_figures, RouterSnapshot};
use codendum_core::server_figures::router_figures::RouterFigures;

use super::sampler::{ScrapeError, Scraper};

/// The router's page, read over HTTP.
#[derive(Debug, Clone)]
pub struct RouterReader {
    scraper: Scraper,
    url: String,
}

impl RouterReader {
    /// Reads `url` with `client`.
    pub fn new(client: reqwest::Client, url: &str) -> Self {
        RouterReader {
            scraper: Scraper::new(client, Vec::new()),
            url: url.to_string(),
        }
    }

    /// One read. A page without any `vllm_router_` figure is an error: the
    /// URL is not the router's own page (a backend's `/metrics`, say).
    pub async fn read(&self) -> Result<RouterSnapshot, ScrapeError> {
        let text = self.scraper.fetch_text(&self.url).await?;
        let page = parse(&text).map_err(|source| ScrapeError::NotPrometheus {
            url: self.url.clone(),
            source,
        })?;
        let snapshot = RouterSnapshot::from_exposition(&page);
        if !snapshot.is_router() {
            return Err(ScrapeError::NotRouter {
                url: self.url.clone(),
            });
        }
        Ok(snapshot)
    }
}

/// A run's router: the reading at its start, read again at its end.
#[derive(Debug)]
pub struct RouterWatch {
    reader: RouterReader,
    start: RouterSnapshot,
}

impl RouterWatch {
    /// Reads the router once now; the error says why it could not be read
    /// (the run then goes on without router figures).
    pub async fn start(reader: RouterReader) -> Result<RouterWatch, ScrapeError> {
        let start = reader.read().await?;
        Ok(RouterWatch { reader, start })
    }

    /// Reads it again and returns what it did since the start.
    pub async fn finish(self) -> Result<RouterFigures, ScrapeError> {
        let end = self.reader.read().await?;
        Ok(router_figures(&self.start, &end))
    }
}
