//! `lockstep release serve`: the index directory over HTTP on loopback, for
//! local use, tests and CI jobs that install from it, with PEP 691 content
//! negotiation (JSON to clients that ask for it, HTML otherwise).
//!
//! The HTTP/1.1 protocol is hyper's (a maintained server, on tokio), so this
//! module only decides what is served and bounds what a client can hold:
//!
//! - at most [`ServeOptions::max_connections`] connections are served at
//!   once; one more is accepted and answered `503` with `Retry-After` (the
//!   accept loop never stops, whatever the clients do);
//! - a request's head must arrive within [`ServeOptions::header_timeout`],
//!   which also closes idle keep-alive connections (a client that sends one
//!   byte a second is cut off, it does not hold a worker);
//! - a response that makes no progress for [`ServeOptions::stall_timeout`]
//!   (a client that stopped reading) is dropped;
//! - GET and HEAD, single `Range` requests (206, or 416 when unsatisfiable);
//!   files are streamed, never read whole.
//!
//! Only regular files inside the index root are served: paths are
//! percent-decoded and must stay inside; no component may start with `.`
//! (`.lock`, `.simple.tmp-*`); no component may be a symlink (a link in
//! `files/` to anything outside the index is a 404). Directory redirects are
//! built from the checked path, so `//evil.example` never becomes an open
//! redirect. The engine prints nothing: each answered request is reported
//! to the caller's [`AccessLog`].

use std::convert::Infallible;
use std::fs::File;
use std::future::Future;
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use lockstep_core::Error;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use crate::index::{HTML_TYPE, JSON_TYPE};

/// Bytes a request head may take (hyper's read buffer).
const MAX_HEADER_BYTES: usize = 64 << 10;
/// Bytes read from a file per chunk of a response body.
const CHUNK: u64 = 256 << 10;
/// Connections over the bound being answered 503 at once; beyond this they
/// are closed without an answer (the server's memory stays bounded).
const MAX_REFUSING: usize = 1024;

/// What happened to one request, for the caller's access log.
#[derive(Debug, Clone)]
pub struct Access {
    pub method: String,
    /// The request's path as sent (not decoded; may hold anything).
    pub path: String,
    pub status: u16,
    /// Body bytes announced (0 for HEAD).
    pub bytes: u64,
}

/// Called once per answered request; the caller decides where it goes.
pub type AccessLog = Arc<dyn Fn(&Access) + Send + Sync>;

/// Bounds and hooks of the server.
#[derive(Clone)]
pub struct ServeOptions {
    /// Connections served at once; more are answered 503.
    pub max_connections: usize,
    /// Longest wait for a request's head, and for the next request on an
    /// idle keep-alive connection.
    pub header_timeout: Duration,
    /// Longest a response may make no progress (the client stopped reading).
    pub stall_timeout: Duration,
    /// Tokio worker threads (0: one per core).
    pub workers: usize,
    pub access_log: Option<AccessLog>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(30),
            workers: 0,
            access_log: None,
        }
    }
}

/// Binds 127.0.0.1:`port` (0 = any free port); returns the listener and the port.
pub fn bind(port: u16) -> Result<(TcpListener, u16), Error> {
    let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
        Error::usage(format!("cannot listen on 127.0.0.1:{port}"))
            .cause(e.to_string())
            .hint("pick another --port, or 0 for any free one")
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::failed(e.to_string()))?
        .port();
    Ok((listener, port))
}

/// Serves `root` on `listener` until the process ends.
pub fn serve(listener: TcpListener, root: PathBuf, options: ServeOptions) -> Result<(), Error> {
    let root = root.canonicalize().map_err(|e| {
        Error::failed(format!("cannot serve {}", root.display())).cause(e.to_string())
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::failed("cannot set up the listener").cause(e.to_string()))?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if options.workers > 0 {
        runtime.worker_threads(options.workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|e| Error::failed("cannot start the server's runtime").cause(e.to_string()))?;
    runtime.block_on(accept_loop(listener, root, options))
}

struct Shared {
    root: PathBuf,
    options: ServeOptions,
}

async fn accept_loop(
    listener: TcpListener,
    root: PathBuf,
    options: ServeOptions,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| Error::failed("cannot set up the listener").cause(e.to_string()))?;
    let serving = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let shared = Arc::new(Shared { root, options });
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it
                // was accepted: wait a moment and go on, never stop serving.
                tracing::debug!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        if let Ok(permit) = serving.clone().try_acquire_owned() {
            let shared = shared.clone();
            tokio::spawn(async move {
                connection(stream, shared).await;
                drop(permit);
            });
        } else if let Ok(permit) = refusing.clone().try_acquire_owned() {
            tokio::spawn(async move {
                refuse(stream).await;
                drop(permit);
            });
        }
        // Else the stream is dropped here: closed without an answer.
    }
}

/// Over the bound: a short 503 that tells the client to come back.
async fn refuse(mut stream: tokio::net::TcpStream) {
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
Content-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n";
    let answer = async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so that closing does not
        // reset the connection before the client has read the 503.
        let mut sink = [0u8; 4096];
        loop {
            if tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? == 0 {
                return Ok::<(), io::Error>(());
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), answer).await;
}

async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let header_timeout = shared.options.header_timeout;
    let io = TokioIo::new(Stall::new(stream, shared.options.stall_timeout));
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(&shared, request).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    if let Err(e) = builder.serve_connection(io, service).await {
        tracing::debug!(error = %e, "connection ended");
    }
}

/// Answers one request and reports it to the access log.
async fn answer<B>(shared: &Shared, request: Request<B>) -> Response<ServeBody> {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let response = respond(shared, &request).await;
    if let Some(log) = &shared.options.access_log {
        let bytes = if method == Method::HEAD {
            0
        } else {
            response.body().size_hint().exact().unwrap_or(0)
        };
        log(&Access {
            method: method.to_string(),
            path,
            status: response.status().as_u16(),
            bytes,
        });
    }
    response
}

async fn respond<B>(shared: &Shared, request: &Request<B>) -> Response<ServeBody> {
    let head = request.method() == Method::HEAD;
    if request.method() != Method::GET && !head {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n",
            false,
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let path = request.uri().path();
    let Some(relative) = safe_path(path) else {
        return text(StatusCode::BAD_REQUEST, "bad path\n", head);
    };
    let accept = header_text(request, header::ACCEPT);
    let range = header_text(request, header::RANGE);
    let if_range = header_text(request, header::IF_RANGE);
    let wants_slash = !path.ends_with('/');
    let root = shared.root.clone();
    let found =
        tokio::task::spawn_blocking(move || find(&root, &relative, &accept, wants_slash)).await;
    match found {
        Ok(Found::Directory(relative)) if wants_slash => {
            // Built from the checked relative path: never `//host` (an open redirect).
            let location = if relative.as_os_str().is_empty() {
                "/".to_string()
            } else {
                format!("/{}/", relative.display())
            };
            let mut response = text(StatusCode::MOVED_PERMANENTLY, "", head);
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        }
        Ok(Found::Directory(_)) | Ok(Found::Nothing) | Err(_) => {
            text(StatusCode::NOT_FOUND, "not found\n", head)
        }
        Ok(Found::File {
            file,
            length,
            etag,
            kind,
            negotiated,
        }) => {
            let mut response = file_response(
                file,
                length,
                &etag,
                kind,
                head,
                range
                    .as_deref()
                    .filter(|_| if_range.as_deref().is_none_or(|v| v == etag)),
            );
            if negotiated {
                response
                    .headers_mut()
                    .insert(header::VARY, HeaderValue::from_static("Accept"));
            }
            response
        }
    }
}

fn header_text<B>(request: &Request<B>, name: header::HeaderName) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// What a checked path names inside the root.
enum Found {
    /// A directory without the negotiated index page (or a path that must
    /// be redirected to end with `/`).
    Directory(PathBuf),
    File {
        file: File,
        length: u64,
        etag: String,
        kind: &'static str,
        /// The page was chosen by the Accept header.
        negotiated: bool,
    },
    Nothing,
}

/// Looks `relative` up under `root` without following any symlink and
/// without entering dot-directories; a directory's index page is chosen by
/// `accept` (PEP 691); a directory asked for without its trailing slash
/// is only named (to be redirected), so relative links in its page work.
fn find(root: &Path, relative: &Path, accept: &Option<String>, wants_slash: bool) -> Found {
    match lookup(root, relative) {
        Some(Node::File(path)) => {
            let name = path.to_string_lossy();
            let kind = if name.ends_with(".html") {
                "text/html; charset=utf-8"
            } else if name.ends_with(".json") {
                "application/json"
            } else {
                "application/octet-stream"
            };
            open_file(&path, kind, false).unwrap_or(Found::Nothing)
        }
        Some(Node::Directory) if wants_slash => Found::Directory(relative.to_path_buf()),
        Some(Node::Directory) => {
            let accept = accept.as_deref().unwrap_or_default();
            let wants_json = accept.contains("vnd.pypi.simple.v1+json")
                || accept.contains("vnd.pypi.simple.latest+json");
            let json = relative.join("index.json");
            let html = relative.join("index.html");
            let page = if wants_json {
                match lookup(root, &json) {
                    Some(Node::File(path)) => Some((path, JSON_TYPE)),
                    _ => None,
                }
            } else {
                None
            };
            let page = page.or_else(|| match lookup(root, &html) {
                Some(Node::File(path)) if accept.contains("vnd.pypi.simple") => {
                    Some((path, HTML_TYPE))
                }
                Some(Node::File(path)) => Some((path, "text/html; charset=utf-8")),
                _ => None,
            });
            match page {
                Some((path, kind)) => open_file(&path, kind, true).unwrap_or(Found::Nothing),
                None => Found::Directory(relative.to_path_buf()),
            }
        }
        None => Found::Nothing,
    }
}

enum Node {
    File(PathBuf),
    Directory,
}

/// `root/relative` when every component is a real directory (the last a
/// regular file or directory), none a symlink, none starting with `.`.
fn lookup(root: &Path, relative: &Path) -> Option<Node> {
    let mut current = root.to_path_buf();
    for component in relative.components() {
        let Component::Normal(name) = component else {
            return None;
        };
        if name.to_string_lossy().starts_with('.') {
            return None;
        }
        if !std::fs::symlink_metadata(&current).ok()?.is_dir() {
            return None;
        }
        current.push(name);
    }
    let meta = std::fs::symlink_metadata(&current).ok()?;
    if meta.is_dir() {
        Some(Node::Directory)
    } else if meta.is_file() {
        Some(Node::File(current))
    } else {
        // Symlinks, sockets, devices, FIFOs.
        None
    }
}

/// Opens a regular file without following a symlink that replaced it since
/// [`lookup`] looked.
fn open_file(path: &Path, kind: &'static str, negotiated: bool) -> Option<Found> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let etag = format!(
        "\"{:x}-{:x}-{:x}\"",
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    );
    Some(Found::File {
        file,
        length: meta.len(),
        etag,
        kind,
        negotiated,
    })
}

/// A 200 with the whole file, a 206 with the asked range, or a 416.
fn file_response(
    file: File,
    length: u64,
    etag: &str,
    kind: &'static str,
    head: bool,
    range: Option<&str>,
) -> Response<ServeBody> {
    let (status, start, count) = match range.map(|r| parse_range(r, length)) {
        Some(Ok(Some((start, end)))) => (StatusCode::PARTIAL_CONTENT, start, end - start + 1),
        Some(Err(Unsatisfiable)) => {
            let mut response = text(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range not satisfiable\n",
                head,
            );
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{length}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            return response;
        }
        _ => (StatusCode::OK, 0, length),
    };
    let body = if head {
        ServeBody::Empty
    } else {
        ServeBody::File(FileBody {
            file: Arc::new(file),
            offset: start,
            remaining: count,
            pending: None,
        })
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(count));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    if status == StatusCode::PARTIAL_CONTENT {
        let value = format!("bytes {start}-{}/{length}", start + count - 1);
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(header::CONTENT_RANGE, value);
        }
    }
    response
}

fn text(status: StatusCode, body: &'static str, head: bool) -> Response<ServeBody> {
    let mut response = Response::new(if head {
        ServeBody::Empty
    } else {
        ServeBody::Static(Bytes::from_static(body.as_bytes()))
    });
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    response
}

/// A range that starts past the end of the file (or asks for nothing).
#[derive(Debug, PartialEq, Eq)]
pub struct Unsatisfiable;

/// A single `bytes=` range of a `length`-byte file as (first, last) byte,
/// both inclusive. `Ok(None)`: no usable single range (malformed, several
/// ranges, another unit), so the whole file is sent, as RFC 9110 allows.
pub fn parse_range(value: &str, length: u64) -> Result<Option<(u64, u64)>, Unsatisfiable> {
    let Some((unit, spec)) = value.trim().split_once('=') else {
        return Ok(None);
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim().is_empty(), number(first), number(last)) {
        // `-N`: the last N bytes.
        (true, _, Some(suffix)) => {
            if suffix == 0 || length == 0 {
                return Err(Unsatisfiable);
            }
            Ok(Some((length.saturating_sub(suffix), length - 1)))
        }
        (false, Some(start), None) if last.trim().is_empty() => {
            if start >= length {
                return Err(Unsatisfiable);
            }
            Ok(Some((start, length - 1)))
        }
        (false, Some(start), Some(end)) if start <= end => {
            if start >= length {
                return Err(Unsatisfiable);
            }
            Ok(Some((start, end.min(length - 1))))
        }
        _ => Ok(None),
    }
}

/// A response body: nothing, a short static text, or part of a file read in
/// chunks on tokio's blocking pool.
pub enum ServeBody {
    Empty,
    Static(Bytes),
    File(FileBody),
}

pub struct FileBody {
    file: Arc<File>,
    offset: u64,
    remaining: u64,
    pending: Option<tokio::task::JoinHandle<io::Result<Bytes>>>,
}

impl Body for ServeBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            ServeBody::Empty => Poll::Ready(None),
            ServeBody::Static(bytes) => {
                if bytes.is_empty() {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Ok(Frame::data(std::mem::take(bytes)))))
                }
            }
            ServeBody::File(body) => body.poll_chunk(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ServeBody::Empty => true,
            ServeBody::Static(bytes) => bytes.is_empty(),
            ServeBody::File(body) => body.remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ServeBody::Empty => SizeHint::with_exact(0),
            ServeBody::Static(bytes) => SizeHint::with_exact(bytes.len() as u64),
            ServeBody::File(body) => SizeHint::with_exact(body.remaining),
        }
    }
}

impl FileBody {
    fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let pending = self.pending.get_or_insert_with(|| {
            let file = self.file.clone();
            let (offset, want) = (self.offset, self.remaining.min(CHUNK) as usize);
            tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; want];
                let mut filled = 0;
                while filled < want {
                    match file.read_at(&mut buf[filled..], offset + filled as u64) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                buf.truncate(filled);
                Ok(Bytes::from(buf))
            })
        });
        let result = match Pin::new(pending).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        self.pending = None;
        let chunk = match result {
            Ok(Ok(chunk)) if !chunk.is_empty() => chunk,
            // The file shrank under us: the announced length cannot be met.
            Ok(Ok(_)) => return Poll::Ready(Some(Err(io::ErrorKind::UnexpectedEof.into()))),
            Ok(Err(e)) => return Poll::Ready(Some(Err(e))),
            Err(e) => return Poll::Ready(Some(Err(io::Error::other(e)))),
        };
        self.offset += chunk.len() as u64;
        self.remaining -= chunk.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

/// A connection whose writes fail after making no progress for a while: a
/// client that stops reading a large wheel does not hold its slot forever.
/// (Reads need no such guard: hyper's header timeout bounds the wait for a
/// request, and nothing here waits on a request body.)
struct Stall {
    inner: tokio::net::TcpStream,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Stall {
    fn new(inner: tokio::net::TcpStream, limit: Duration) -> Stall {
        Stall {
            inner,
            limit,
            timer: None,
        }
    }

    fn check<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(r) => {
                self.timer = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.limit;
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client stopped reading",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for Stall {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stall {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check(cx, result)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A `Range` header read against a file's length ([`parse_range`]).
pub type RangeRead = Result<Option<(u64, u64)>, Unsatisfiable>;

/// What a request names, as `serve` reads it (the fuzzable entry point):
/// the path's file inside the index (`None`: refused, 404/400) and the byte
/// range of a `Range` header against a file of `length` bytes.
pub fn read_request(
    path: &str,
    range: Option<&str>,
    length: u64,
) -> (Option<PathBuf>, Option<RangeRead>) {
    (
        safe_path(path),
        range.map(|value| parse_range(value, length)),
    )
}

/// The request path as a relative path with only normal components.
fn safe_path(path: &str) -> Option<PathBuf> {
    if !path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return None;
    }
    let decoded = percent_decode(path)?;
    if decoded.contains(['\\', '\0']) {
        return None;
    }
    let mut out = PathBuf::new();
    for c in Path::new(&decoded).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// `%XX` decoded (the result must be UTF-8); a bad escape is `None`.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn no_path_climbs_out(path in "[a-z./%2B\\\\]{0,30}") {
            if let Some(p) = safe_path(&path) {
                prop_assert!(p.components().all(|c| matches!(c, Component::Normal(_))));
            }
        }

        #[test]
        fn ranges_stay_inside_the_file(value in "\\PC{0,24}", length in 0u64..10_000) {
            if let Ok(Some((start, end))) = parse_range(&value, length) {
                prop_assert!(start <= end && end < length);
            }
        }
    }

    #[test]
    fn paths_stay_inside() {
        assert_eq!(
            safe_path("/simple/demo/"),
            Some(PathBuf::from("simple/demo"))
        );
        assert_eq!(
            safe_path("/files/1.0%2Bx/a.whl"),
            Some(PathBuf::from("files/1.0+x/a.whl"))
        );
        assert_eq!(
            safe_path("/files/1%212.0/a.whl"),
            Some(PathBuf::from("files/1!2.0/a.whl"))
        );
        for bad in [
            "/../etc/passwd",
            "/simple/../../x",
            "relative",
            "/%2e%2e/x",
            "/a%5cb",
            "/a%00",
            "/a%zz",
            "/a%e2",
        ] {
            assert_eq!(safe_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn single_ranges_parse() {
        assert_eq!(parse_range("bytes=0-99", 1000), Ok(Some((0, 99))));
        assert_eq!(parse_range("bytes=900-", 1000), Ok(Some((900, 999))));
        assert_eq!(parse_range("bytes=-100", 1000), Ok(Some((900, 999))));
        assert_eq!(parse_range("bytes=-5000", 1000), Ok(Some((0, 999))));
        assert_eq!(parse_range("bytes=990-5000", 1000), Ok(Some((990, 999))));
        assert_eq!(parse_range("bytes=1000-", 1000), Err(Unsatisfiable));
        assert_eq!(parse_range("bytes=-0", 1000), Err(Unsatisfiable));
        assert_eq!(parse_range("bytes=0-", 0), Err(Unsatisfiable));
        for ignored in [
            "bytes=5-1",
            "bytes=0-1,5-6",
            "items=0-1",
            "bytes=a-b",
            "0-1",
            "bytes=-",
        ] {
            assert_eq!(parse_range(ignored, 1000), Ok(None), "{ignored}");
        }
    }

    #[test]
    fn nothing_hidden_or_linked_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("index");
        let outside = dir.path().join("secret.txt");
        std::fs::write(&outside, "secret").unwrap();
        std::fs::create_dir_all(root.join("files/1.0")).unwrap();
        std::fs::create_dir_all(root.join(".simple.tmp-1")).unwrap();
        std::fs::write(root.join("files/1.0/a.whl"), "wheel").unwrap();
        std::fs::write(root.join(".lock"), "").unwrap();
        std::fs::write(root.join(".simple.tmp-1/index.html"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("files/1.0/link.whl")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("files/up")).unwrap();
        assert!(matches!(
            lookup(&root, Path::new("files/1.0/a.whl")),
            Some(Node::File(_))
        ));
        for hidden in [
            ".lock",
            ".simple.tmp-1/index.html",
            "files/1.0/link.whl",
            "files/up/secret.txt",
        ] {
            assert!(lookup(&root, Path::new(hidden)).is_none(), "{hidden}");
        }
    }
}
