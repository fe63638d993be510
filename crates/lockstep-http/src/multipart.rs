//! `multipart/form-data` bodies (RFC 7578), built in memory: the one encoder
//! (Discord file attachments use it). Bodies here are small messages;
//! uploads of large files belong to uv, not to this module.

/// A form being built: fields and files in order.
#[derive(Debug, Clone, Default)]
pub struct Multipart {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
struct Part {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

/// An encoded form: its `Content-Type` header value and its body.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Multipart {
    pub fn new() -> Multipart {
        Multipart::default()
    }

    /// A plain field (`Content-Type` given when it is not text, e.g. JSON).
    pub fn field(mut self, name: &str, content_type: Option<&str>, value: &[u8]) -> Multipart {
        self.parts.push(Part {
            name: name.to_string(),
            file_name: None,
            content_type: content_type.map(str::to_string),
            data: value.to_vec(),
        });
        self
    }

    /// A file part.
    pub fn file(
        mut self,
        name: &str,
        file_name: &str,
        content_type: &str,
        data: &[u8],
    ) -> Multipart {
        self.parts.push(Part {
            name: name.to_string(),
            file_name: Some(file_name.to_string()),
            content_type: Some(content_type.to_string()),
            data: data.to_vec(),
        });
        self
    }

    /// Encodes with a fresh random boundary that occurs in no part.
    pub fn encode(&self) -> Encoded {
        loop {
            let boundary = format!(
                "lockstep-{:016x}{:016x}",
                rand::random::<u64>(),
                rand::random::<u64>()
            );
            if let Some(encoded) = self.encode_with(&boundary) {
                return encoded;
            }
        }
    }

    /// Encodes with `boundary`, or `None` when a part contains it (the
    /// body would then end early at the receiver).
    pub fn encode_with(&self, boundary: &str) -> Option<Encoded> {
        let delimiter = format!("--{boundary}");
        if self
            .parts
            .iter()
            .any(|p| contains(&p.data, delimiter.as_bytes()))
        {
            return None;
        }
        let mut body = Vec::new();
        for part in &self.parts {
            body.extend_from_slice(format!("{delimiter}\r\n").as_bytes());
            let mut disposition = format!(
                "Content-Disposition: form-data; name=\"{}\"",
                quote(&part.name)
            );
            if let Some(file_name) = &part.file_name {
                disposition.push_str(&format!("; filename=\"{}\"", quote(file_name)));
            }
            body.extend_from_slice(disposition.as_bytes());
            body.extend_from_slice(b"\r\n");
            if let Some(kind) = &part.content_type {
                body.extend_from_slice(
                    format!("Content-Type: {}\r\n", header_value(kind)).as_bytes(),
                );
            }
            body.extend_from_slice(b"\r\n");
            body.extend_from_slice(&part.data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("{delimiter}--\r\n").as_bytes());
        Some(Encoded {
            content_type: format!("multipart/form-data; boundary={boundary}"),
            body,
        })
    }
}

/// A name for a quoted-string in Content-Disposition, escaped as browsers do
/// (RFC 7578 §4.2 and the HTML standard): `"`, CR and LF as `%22`, `%0D`, `%0A`.
fn quote(name: &str) -> String {
    name.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A header value without line breaks (a content type can come from a caller).
fn header_value(value: &str) -> String {
    value.chars().filter(|c| *c != '\r' && *c != '\n').collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parts_are_framed_with_crlf() {
        let form = Multipart::new()
            .field("payload_json", Some("application/json"), b"{}")
            .file(
                "files[0]",
                "errors.txt",
                "text/plain; charset=utf-8",
                b"boom\n",
            );
        let encoded = form.encode_with("B").unwrap();
        assert_eq!(encoded.content_type, "multipart/form-data; boundary=B");
        assert_eq!(
            String::from_utf8(encoded.body).unwrap(),
            "--B\r\nContent-Disposition: form-data; name=\"payload_json\"\r\n\
             Content-Type: application/json\r\n\r\n{}\r\n\
             --B\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"errors.txt\"\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\nboom\n\r\n--B--\r\n"
        );
    }

    #[test]
    fn names_cannot_break_out_of_their_header() {
        let form = Multipart::new().file("a\"\r\nX: y", "f\"\n.txt", "text/plain\r\nX: z", b"");
        let body = String::from_utf8(form.encode_with("B").unwrap().body).unwrap();
        assert!(
            body.contains("name=\"a%22%0D%0AX: y\"; filename=\"f%22%0A.txt\""),
            "{body}"
        );
        assert!(!body.contains("\r\nX:"), "{body}");
    }

    proptest! {
        #[test]
        fn the_boundary_never_occurs_in_a_part(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let form = Multipart::new().field("a", None, &data).field("b", None, b"--lockstep-");
            let encoded = form.encode();
            let boundary = encoded.content_type.rsplit('=').next().unwrap().to_string();
            prop_assert!(boundary.len() <= 70);
            prop_assert!(!contains(&data, boundary.as_bytes()));
            prop_assert!(form.encode_with("x").is_some() || contains(&data, b"--x"));
        }
    }
}
