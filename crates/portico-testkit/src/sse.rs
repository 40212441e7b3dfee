//! A small server-sent events reader over reqwest, for the live stream tests.

use std::time::Duration;

use serde_json::Value;

/// One open event stream.
pub struct Sse {
    response: reqwest::Response,
    buffer: String,
}

/// One event: its name and data (a `: comment` is the name `:` with the text as a string).
pub type SseEvent = (String, Value);

impl Sse {
    /// Sends `request` with `Accept: text/event-stream`; panics unless the answer is a 200 stream.
    pub async fn open(request: reqwest::RequestBuilder) -> Sse {
        let response = request
            .header("accept", "text/event-stream")
            .send()
            .await
            .expect("request");
        assert_eq!(response.status().as_u16(), 200, "the stream was refused");
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        Sse {
            response,
            buffer: String::new(),
        }
    }

    /// A header of the stream's response.
    pub fn header(&self, name: &str) -> Option<String> {
        self.response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The next event or comment, `None` when the stream ended; panics after 10 s of silence.
    pub async fn next_any(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = "message".to_owned();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(comment) = line.strip_prefix(':') {
                        return Some((":".into(), Value::String(comment.trim().into())));
                    } else if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                let data = serde_json::from_str(&data).expect("data is JSON");
                return Some((name, data));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
                .await
                .expect("no event within 10 s")
                .expect("stream error")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }

    /// The next event, skipping `: ping` comments; panics when the stream ended.
    pub async fn next(&mut self) -> SseEvent {
        loop {
            let event = self.next_any().await.expect("the stream ended");
            if event.0 != ":" {
                return event;
            }
        }
    }

    /// True when the stream ends after at most an `end` event.
    pub async fn ends(&mut self) -> bool {
        loop {
            match self.next_any().await {
                None => return true,
                Some((name, _)) if name == "end" || name == ":" => {}
                Some(_) => return false,
            }
        }
    }
}
