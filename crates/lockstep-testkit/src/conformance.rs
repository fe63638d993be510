//! The loopback GitHub held to GitHub's own description of its REST API:
//! every exchange the stand-in serves is matched to an operation of the
//! pinned OpenAPI description (`@octokit/openapi`, GitHub's official
//! description as Octokit publishes it on npm), its query parameters and
//! JSON body checked against the operation's parameters and request
//! schema, and the answer against the operation's response schema for its
//! status. A field the stand-in invents, drops or types wrongly is a
//! violation naming the operation and the field, so it cannot be wrong in
//! both the client and its tests at once.
//!
//! The description is fetched at a pinned version (`npm pack`, the tarball's
//! sha512 checked against the integrity pinned here) into the tests' tool
//! directory beside the shared toolchains, once per machine; nothing of it
//! is vendored. Its schemas are OpenAPI 3.0's dialect; they are turned into
//! JSON Schema 2020-12 (`nullable` into a `null` type, examples dropped) and
//! validated by the `jsonschema` crate. Objects are held to the properties
//! the description lists (`unevaluatedProperties: false`): GitHub may add
//! fields, but a stand-in must not make any up.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};

/// The npm package and version of the description.
pub const OPENAPI_PACKAGE: &str = "@octokit/openapi@23.0.2";
/// npm's integrity of that version's tarball (the registry's `dist.integrity`).
const OPENAPI_INTEGRITY: &str =
    "sha512-pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg==";
/// The description of api.github.com inside the tarball.
const OPENAPI_FILE: &str = "package/generated/api.github.com.json";

/// The newest GitHub Enterprise Server description in the same package.
const ENTERPRISE_FILE: &str = "package/generated/ghes-3.19.json";
/// The Enterprise Server version [`ENTERPRISE_FILE`] describes.
pub const ENTERPRISE_VERSION: &str = "3.19";

/// The npm package and version of GitHub's GraphQL schema.
pub const GRAPHQL_PACKAGE: &str = "@octokit/graphql-schema@15.26.1";
const GRAPHQL_INTEGRITY: &str =
    "sha512-RFDC2MpRBd4AxSRvUeBIVeBU7ojN/SxDfALUd7iVYOSeEK3gZaqR2MGOysj4Zh2xj2RY5fQAUT+Oqq7hWTraMA==";
const GRAPHQL_FILE: &str = "package/schema.graphql";

/// What GitHub's published schema itself gets wrong, as Apollo's compiler
/// reports it (two fields of `EnterpriseOwnerInfo` defined twice): the
/// schema is used as parsed despite these, and only these.
const GRAPHQL_SCHEMA_DEFECTS: [&str; 2] = [
    "duplicate definitions for the `repositoryDeployKeySetting` field of object type `EnterpriseOwnerInfo`",
    "duplicate definitions for the `repositoryDeployKeySettingOrganizations` field of object type `EnterpriseOwnerInfo`",
];

/// The URI the description's `components` are registered under: every
/// `$ref` points into it.
const ROOT: &str = "https://api.github.com/lockstep-conformance/description";

/// The most departures one check names.
const MAX_REPORTED: usize = 64;

/// The methods an OpenAPI path item holds operations for.
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// One exchange as the loopback server saw it.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    pub method: &'a str,
    /// Path and query, relative to the API's root.
    pub target: &'a str,
    /// The request's `Accept` header: `application/octet-stream` asks for
    /// an asset's bytes (a 200 with them, or a 302 to them), which the
    /// description documents in words, not as a schema.
    pub accept: Option<&'a str>,
    pub request_body: &'a [u8],
    pub status: u16,
    pub response_body: &'a [u8],
}

/// One operation of the description.
#[derive(Debug)]
struct Operation {
    id: String,
    method: String,
    /// The path template's segments (`{owner}` a parameter).
    segments: Vec<String>,
    /// Query parameters: name -> (required, schema).
    query: BTreeMap<String, (bool, Value)>,
    /// The JSON request body's schema, and whether a body is required.
    body: Option<(bool, Value)>,
    /// Status ("200", "4XX", "default") -> the JSON response's schema
    /// (`None`: no JSON content declared).
    responses: BTreeMap<String, Option<Value>>,
}

/// The description, ready to check exchanges.
pub struct Description {
    operations: Vec<Operation>,
    /// `components` in JSON Schema's dialect, registered under [`ROOT`]:
    /// where every `$ref` points.
    registry: jsonschema::Registry<'static>,
    /// The same components, to walk ([`Description::missing_fields`]).
    schemas: Value,
    /// Compiled validators, by operation and part.
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for Description {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Description({} operations)", self.operations.len())
    }
}

/// GitHub's description (api.github.com), fetched and prepared once per
/// process.
pub fn github() -> Result<&'static Description, String> {
    static DESCRIPTION: OnceLock<Result<Description, String>> = OnceLock::new();
    DESCRIPTION
        .get_or_init(|| prepared(OPENAPI_FILE))
        .as_ref()
        .map_err(Clone::clone)
}

/// The description `member` of the OpenAPI package, fetched and prepared.
fn prepared(member: &str) -> Result<Description, String> {
    let path = fetched(OPENAPI_PACKAGE, OPENAPI_INTEGRITY, member)?;
    let text = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    Description::from_openapi(&doc)
}

/// Where the tests' tools live: beside the shared toolchains.
fn tools_dir() -> PathBuf {
    crate::toolchains().join("../test-tools")
}

/// GitHub Enterprise Server's description ([`ENTERPRISE_VERSION`], the
/// newest in the package), fetched and prepared once per process: the
/// same paths under `https://HOST/api/v3`.
pub fn enterprise() -> Result<&'static Description, String> {
    static DESCRIPTION: OnceLock<Result<Description, String>> = OnceLock::new();
    DESCRIPTION
        .get_or_init(|| prepared(ENTERPRISE_FILE))
        .as_ref()
        .map_err(Clone::clone)
}

/// GitHub's GraphQL schema, fetched and parsed once per process.
pub fn graphql() -> Result<&'static GraphqlSchema, String> {
    static SCHEMA: OnceLock<Result<GraphqlSchema, String>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let path = fetched(GRAPHQL_PACKAGE, GRAPHQL_INTEGRITY, GRAPHQL_FILE)?;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            GraphqlSchema::parse(&text)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// GitHub's GraphQL schema, ready to validate documents.
pub struct GraphqlSchema {
    schema: apollo_compiler::validation::Valid<apollo_compiler::Schema>,
}

impl GraphqlSchema {
    /// Parses `sdl`; an error but GitHub's own known ones refuses it.
    pub fn parse(sdl: &str) -> Result<GraphqlSchema, String> {
        let schema = match apollo_compiler::Schema::parse_and_validate(sdl, "schema.graphql") {
            Ok(valid) => valid,
            Err(with) => {
                let unknown: Vec<String> = with
                    .errors
                    .iter()
                    .map(|e| {
                        first_line(&e.to_string())
                            .trim_start_matches("Error: ")
                            .to_string()
                    })
                    .filter(|e| !GRAPHQL_SCHEMA_DEFECTS.contains(&e.as_str()))
                    .collect();
                if !unknown.is_empty() {
                    return Err(format!(
                        "GitHub's GraphQL schema does not parse: {}",
                        unknown.join("; ")
                    ));
                }
                apollo_compiler::validation::Valid::assume_valid(with.partial)
            }
        };
        Ok(GraphqlSchema { schema })
    }

    /// Checks a GraphQL request's body (`{"query": ..., "variables": ...}`):
    /// the document against the schema (fields, arguments, input types),
    /// and every variable it declares non-null without a default given.
    pub fn check(&self, body: &[u8]) -> Result<(), Vec<String>> {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return Err(vec!["the GraphQL request is not JSON".into()]);
        };
        let Some(query) = request["query"].as_str() else {
            return Err(vec!["the GraphQL request has no `query`".into()]);
        };
        let document = apollo_compiler::ExecutableDocument::parse_and_validate(
            &self.schema,
            query,
            "request.graphql",
        )
        .map_err(|with| {
            with.errors
                .iter()
                .map(|e| {
                    let said = first_line(&e.to_string())
                        .trim_start_matches("Error: ")
                        .to_string();
                    format!("GraphQL `{query}`: {said}")
                })
                .collect::<Vec<_>>()
        })?;
        let mut problems = Vec::new();
        for operation in document.operations.iter() {
            for variable in &operation.variables {
                let given = &request["variables"][variable.name.as_str()];
                if variable.ty.is_non_null() && variable.default_value.is_none() && given.is_null()
                {
                    problems.push(format!(
                        "GraphQL `{query}`: the non-null variable `${}` is not given",
                        variable.name
                    ));
                }
            }
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems),
        }
    }
}

/// The first line of a compiler's report (the rest draws the source).
fn first_line(report: &str) -> &str {
    report.lines().next().unwrap_or_default()
}

/// A file of a pinned npm package, fetched when missing: `npm pack` of the
/// pinned version into a staging directory, the tarball's sha512 compared
/// with the pinned integrity, the one file (`member`) extracted, then moved
/// into place beside the other test tools.
fn fetched(package: &str, integrity: &str, member: &str) -> Result<PathBuf, String> {
    let dir = tools_dir().join(package.replace(['@', '/'], "-").trim_start_matches('-'));
    let file_name = Path::new(member).file_name().unwrap_or_default();
    let file = dir.join(file_name);
    if file.is_file() {
        return Ok(file);
    }
    let root = tools_dir();
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let staging = tempfile::tempdir_in(&root).map_err(|e| e.to_string())?;
    let mut npm = lockstep_core::process::command("npm");
    npm.args(["pack", "--silent", "--pack-destination"])
        .arg(staging.path())
        .arg(package)
        .current_dir(staging.path());
    let bounds = lockstep_core::process::Bounds {
        max_stdout: Some(1 << 20),
        max_stderr: Some(1 << 20),
    };
    let out = lockstep_core::process::capture(
        &mut npm,
        None,
        Some(std::time::Duration::from_secs(600)),
        bounds,
    )
    .map_err(|e| format!("npm (node 20) is required to fetch {package}: {e}"))?;
    if out.exit != lockstep_core::process::Exit::Code(0) {
        return Err(format!(
            "npm pack {package} failed ({:?}): {}",
            out.exit,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tarball = staging.path().join(&name);
    let bytes = std::fs::read(&tarball).map_err(|e| format!("cannot read {name}: {e}"))?;
    check_integrity(&bytes, integrity, package)?;
    let text = extract(&bytes, member, package)?;
    let staged = staging.path().join(file_name);
    std::fs::write(&staged, text).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Another test binary may have won the race; either copy is whole.
    let _ = std::fs::rename(&staged, &file);
    file.is_file()
        .then_some(file.clone())
        .ok_or_else(|| format!("{} is missing after the fetch", file.display()))
}

/// `bytes` hash to npm's `sha512-BASE64` integrity `expected`.
fn check_integrity(bytes: &[u8], expected: &str, package: &str) -> Result<(), String> {
    use base64::Engine as _;
    let got = format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes))
    );
    match got == expected {
        true => Ok(()),
        false => Err(format!(
            "{package}'s tarball has integrity {got}, not the pinned {expected}"
        )),
    }
}

/// The file `name` of the gzipped tarball `bytes`.
fn extract(bytes: &[u8], name: &str, package: &str) -> Result<Vec<u8>, String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let mut entry = entry.map_err(|e| e.to_string())?;
        if entry.path().map_err(|e| e.to_string())?.as_ref() == Path::new(name) {
            let mut text = Vec::new();
            entry.read_to_end(&mut text).map_err(|e| e.to_string())?;
            return Ok(text);
        }
    }
    Err(format!("{name} is not in {package}"))
}

impl Description {
    /// Prepares an OpenAPI 3.0 description: its operations indexed, its
    /// schemas in JSON Schema's dialect.
    pub fn from_openapi(doc: &Value) -> Result<Description, String> {
        let parameters = &doc["components"]["parameters"];
        let mut operations = Vec::new();
        let paths = doc["paths"]
            .as_object()
            .ok_or("the description has no paths")?;
        for (template, item) in paths {
            for method in METHODS {
                let Some(op) = item.get(method) else {
                    continue;
                };
                operations.push(operation(template, method, op, parameters));
            }
        }
        let mut opened = std::collections::BTreeSet::new();
        for op in &mut operations {
            let schemas = op.query.values_mut().map(|(_, s)| s);
            let schemas = schemas.chain(op.body.iter_mut().map(|(_, s)| s));
            for schema in schemas.chain(op.responses.values_mut().flatten()) {
                rewrite_composed_refs(schema, &mut opened);
            }
        }
        let mut components =
            json!({"components": {"schemas": doc["components"]["schemas"].clone()}});
        to_json_schema(&mut components);
        open_composed_parts(&mut components, opened);
        let schemas = components["components"]["schemas"].clone();
        let registry = jsonschema::Registry::new()
            .add(ROOT, components)
            .and_then(|r| r.prepare())
            .map_err(|e| format!("the description's schemas do not register: {e}"))?;
        Ok(Description {
            operations,
            registry,
            schemas,
            validators: Mutex::new(HashMap::new()),
        })
    }

    /// Of `paths` (each a field path from an answer's top: property names,
    /// `[]` for the items of an array), those the response schema of
    /// operation `id` for `status` does not describe: fields a client reads
    /// that GitHub never sends.
    pub fn missing_fields(
        &self,
        id: &str,
        status: &str,
        paths: &[Vec<String>],
    ) -> Result<Vec<String>, String> {
        let op = self
            .operations
            .iter()
            .find(|op| op.id == id)
            .ok_or_else(|| format!("no operation {id} in GitHub's description"))?;
        let schema = op
            .responses
            .get(status)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("{id} declares no JSON answer for {status}"))?;
        Ok(paths
            .iter()
            .filter(|path| !self.describes(schema, path, 0))
            .map(|path| format!("{id} {status}: {}", path.join(".")))
            .collect())
    }

    /// Whether `schema` describes the field at `path` (from `depth`).
    fn describes(&self, schema: &Value, path: &[String], depth: usize) -> bool {
        if depth > 64 {
            return false;
        }
        let schema = self.resolved(schema);
        let Some(step) = path.first() else {
            return true;
        };
        let parts = ["allOf", "anyOf", "oneOf"]
            .iter()
            .flat_map(|k| schema[*k].as_array().map(Vec::as_slice).unwrap_or_default());
        for part in parts {
            if self.describes(part, path, depth + 1) {
                return true;
            }
        }
        let next = match step.as_str() {
            "[]" => &schema["items"],
            name => &schema["properties"][name],
        };
        !next.is_null() && self.describes(next, &path[1..], depth + 1)
    }

    /// `schema` with its `$ref` followed (into the components).
    fn resolved<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let mut schema = schema;
        for _ in 0..16 {
            let Some(target) = schema["$ref"].as_str() else {
                break;
            };
            let name = target.rsplit('/').next().unwrap_or_default();
            schema = &self.schemas[name];
        }
        schema
    }

    /// How many operations the description holds.
    pub fn operation_count(&self) -> usize {
        self.operations.len()
    }

    /// The operation `method path` is, the most literal template first
    /// (`/releases/latest` before `/releases/{release_id}`).
    fn find(&self, method: &str, path: &str) -> Option<&Operation> {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        self.operations
            .iter()
            .filter(|op| op.method.eq_ignore_ascii_case(method) && op.segments.len() == parts.len())
            .filter(|op| {
                op.segments
                    .iter()
                    .zip(&parts)
                    .all(|(s, p)| is_parameter(s) || s == p)
            })
            .min_by_key(|op| op.segments.iter().filter(|s| is_parameter(s)).count())
    }

    /// Checks one exchange: the operation's id, or every way it departs
    /// from the description.
    pub fn check(&self, exchange: &Exchange<'_>) -> Result<String, Vec<String>> {
        let (path, query) = exchange
            .target
            .split_once('?')
            .unwrap_or((exchange.target, ""));
        let Some(op) = self.find(exchange.method, path) else {
            return Err(vec![format!(
                "{} {path}: no operation of GitHub's description",
                exchange.method
            )]);
        };
        let mut problems = Vec::new();
        self.check_query(op, query, &mut problems);
        self.check_request_body(op, exchange.request_body, &mut problems);
        let raw = exchange
            .accept
            .is_some_and(|a| a.contains("application/octet-stream"));
        match raw {
            true if matches!(exchange.status, 200 | 302) => {}
            _ => self.check_response(op, exchange.status, exchange.response_body, &mut problems),
        }
        match problems.is_empty() {
            true => Ok(op.id.clone()),
            false => Err(problems
                .into_iter()
                .map(|p| format!("{} ({} {path}): {p}", op.id, exchange.method))
                .collect()),
        }
    }

    fn check_query(&self, op: &Operation, query: &str, problems: &mut Vec<String>) {
        let given: Vec<(String, String)> = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (
                    lockstep_sandbox::github::percent_decode(k),
                    lockstep_sandbox::github::percent_decode(v),
                )
            })
            .collect();
        for (name, value) in &given {
            let Some((_, schema)) = op.query.get(name) else {
                problems.push(format!(
                    "query parameter `{name}` is not one of the operation's"
                ));
                continue;
            };
            let typed = typed_query_value(schema, value);
            let key = format!("{} query {name}", op.id);
            if let Some(why) = self.invalid(&key, schema, &typed) {
                problems.push(format!("query parameter `{name}={value}`: {why}"));
            }
        }
        for (name, (required, _)) in &op.query {
            if *required && !given.iter().any(|(n, _)| n == name) {
                problems.push(format!("the required query parameter `{name}` is missing"));
            }
        }
    }

    fn check_request_body(&self, op: &Operation, body: &[u8], problems: &mut Vec<String>) {
        let Some((required, schema)) = &op.body else {
            return;
        };
        if body.is_empty() {
            if *required {
                problems.push("the request has no body; the operation requires one".into());
            }
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            problems.push("the request body is not JSON".into());
            return;
        };
        if let Some(why) = self.invalid(&format!("{} request", op.id), schema, &value) {
            problems.push(format!("request body: {why}"));
        }
    }

    fn check_response(&self, op: &Operation, status: u16, body: &[u8], problems: &mut Vec<String>) {
        let code = status.to_string();
        let class = format!("{}XX", status / 100);
        let declared = op
            .responses
            .get(&code)
            .or_else(|| op.responses.get(&class))
            .or_else(|| op.responses.get("default"));
        let Some(schema) = declared else {
            // GitHub documents its usual errors per operation but answers
            // 401, 403, 404 (a repository out of reach), 429 and 5xx to
            // any: those need no declaration.
            if !matches!(status, 401 | 403 | 404 | 429 | 500..=599) {
                problems.push(format!("status {status} is not one the operation answers"));
            }
            return;
        };
        let Some(schema) = schema else {
            return;
        };
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            problems.push(format!("the {status} answer is not JSON"));
            return;
        };
        if let Some(why) = self.invalid(&format!("{} {code}", op.id), schema, &value) {
            problems.push(format!("the {status} answer: {why}"));
        }
    }

    /// Why `value` does not match `schema` (its first [`MAX_REPORTED`] departures,
    /// each with where it is), or `None` when it does.
    fn invalid(&self, key: &str, schema: &Value, value: &Value) -> Option<String> {
        let validator = match self.validator(key, schema) {
            Ok(v) => v,
            Err(e) => return Some(format!("the description's schema does not compile: {e}")),
        };
        let errors: Vec<String> = validator
            .iter_errors(value)
            .take(MAX_REPORTED)
            .map(|e| describe(&e))
            .collect();
        (!errors.is_empty()).then(|| errors.join("; "))
    }

    fn validator(&self, key: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.validators.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(key) {
            return Ok(v.clone());
        }
        let built = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_registry(&self.registry)
            .build(schema)
            .map_err(|e| e.to_string())?;
        let built = Arc::new(built);
        cache.insert(key.to_string(), built.clone());
        Ok(built)
    }
}

/// One departure and where it is; a failed `anyOf` (a nullable object
/// that is neither null nor right) by the reasons of its fewest-failing
/// branch, which name the fields.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    if let jsonschema::error::ValidationErrorKind::AnyOf { context } = error.kind() {
        let only_a_type = |b: &&Vec<jsonschema::ValidationError<'static>>| {
            b.iter().all(|e| {
                matches!(
                    e.kind(),
                    jsonschema::error::ValidationErrorKind::Type { .. }
                )
            })
        };
        let branch = context
            .iter()
            .filter(|b| !b.is_empty() && !only_a_type(b))
            .min_by_key(|b| b.len())
            .or_else(|| context.iter().find(|b| !b.is_empty()));
        if let Some(branch) = branch {
            return branch
                .iter()
                .take(3)
                .map(describe)
                .collect::<Vec<_>>()
                .join("; ");
        }
    }
    format!("{error} at `{}`", error.instance_path())
}

fn is_parameter(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

/// One operation, its parameters resolved (`$ref`s into
/// `components/parameters`) and its schemas in JSON Schema's dialect.
fn operation(template: &str, method: &str, op: &Value, parameters: &Value) -> Operation {
    let mut query = BTreeMap::new();
    for p in op["parameters"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let p = match p["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/parameters/"))
        {
            Some(name) => &parameters[name],
            None => p,
        };
        if p["in"] == "query" {
            let mut schema = p["schema"].clone();
            to_json_schema(&mut schema);
            // GitHub states some bounds only in words (`per_page`: "The
            // number of results per page (max 100)"): they bind too.
            if let Some(max) = stated_maximum(p["description"].as_str().unwrap_or_default()) {
                if schema.get("maximum").is_none() && schema.is_object() {
                    schema["maximum"] = json!(max);
                }
            }
            query.insert(
                p["name"].as_str().unwrap_or_default().to_string(),
                (p["required"] == true, schema),
            );
        }
    }
    let body = op["requestBody"]["content"]["application/json"]["schema"]
        .as_object()
        .map(|s| {
            let mut schema = Value::Object(s.clone());
            to_json_schema(&mut schema);
            (op["requestBody"]["required"] == true, schema)
        });
    let responses = op["responses"]
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(code, r)| {
                    let schema = r["content"]["application/json"]["schema"]
                        .as_object()
                        .map(|s| {
                            let mut schema = Value::Object(s.clone());
                            to_json_schema(&mut schema);
                            schema
                        });
                    (code.clone(), schema)
                })
                .collect()
        })
        .unwrap_or_default();
    Operation {
        id: op["operationId"].as_str().unwrap_or(template).to_string(),
        method: method.to_string(),
        segments: template
            .trim_start_matches('/')
            .split('/')
            .map(str::to_string)
            .collect(),
        query,
        body,
        responses,
    }
}

/// The bound a parameter's description states as `(max N)`.
fn stated_maximum(description: &str) -> Option<u64> {
    let rest = &description[description.find("(max ")? + "(max ".len()..];
    rest[..rest.find(')')?].trim().parse().ok()
}

/// A query value as its schema's type reads it (`per_page=30` a number).
fn typed_query_value(schema: &Value, value: &str) -> Value {
    match schema["type"].as_str() {
        Some("integer") => value
            .parse::<i64>()
            .map_or_else(|_| json!(value), |n| json!(n)),
        Some("number") => value
            .parse::<f64>()
            .map_or_else(|_| json!(value), |n| json!(n)),
        Some("boolean") => match value {
            "true" => json!(true),
            "false" => json!(false),
            _ => json!(value),
        },
        _ => json!(value),
    }
}

/// OpenAPI 3.0's schema dialect into JSON Schema 2020-12, in place:
/// `nullable: true` becomes a `null` type (or an `anyOf` with one), the
/// keywords that are only documentation go, and an object schema that
/// lists its properties admits no others (`unevaluatedProperties: false`,
/// which also sees the properties of its `allOf` parts) unless it says so.
fn to_json_schema(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref") {
                if target.starts_with("#/") {
                    *target = format!("{ROOT}{target}");
                }
            }
            let nullable = map.remove("nullable") == Some(Value::Bool(true));
            for key in [
                "example",
                "examples",
                "discriminator",
                "xml",
                "externalDocs",
            ] {
                map.remove(key);
            }
            let composed = ["allOf", "anyOf", "oneOf"];
            for (key, child) in map.iter_mut() {
                match (composed.contains(&key.as_str()), child) {
                    // The parts of a composition are closed by the whole.
                    (true, Value::Array(parts)) => parts.iter_mut().for_each(to_open_json_schema),
                    (_, child) => to_json_schema(child),
                }
            }
            close(map);
            if nullable {
                make_nullable(map);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_json_schema),
        _ => {}
    }
}

/// [`to_json_schema`] for a part of a composition: converted, not closed
/// (the whole it is part of is).
fn to_open_json_schema(value: &mut Value) {
    to_json_schema(value);
    if let Some(map) = value.as_object_mut() {
        map.remove("unevaluatedProperties");
    }
}

/// Where an `allOf` of several parts names a component schema directly
/// (`allOf: [{"$ref": X}, {...}]`), the reference goes to an open copy of
/// X (`X--open`, not closed at its top): closed, X would refuse the
/// properties the other parts add. The `allOf` itself is closed, so the
/// whole still admits nothing unlisted; everywhere else X stays closed.
fn open_composed_parts(root: &mut Value, mut opened: std::collections::BTreeSet<String>) {
    rewrite_composed_refs(root, &mut opened);
    let prefix = format!("{ROOT}#/components/schemas/");
    let Some(schemas) = root
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for name in opened.iter().filter_map(|r| r.strip_prefix(&prefix)) {
        let Some(original) = schemas.get(name.trim_end_matches(OPEN)) else {
            continue;
        };
        let mut copy = original.clone();
        if let Some(map) = copy.as_object_mut() {
            map.remove("unevaluatedProperties");
            if let Some(Value::Array(choices)) = map.get_mut("anyOf") {
                for choice in choices.iter_mut().filter_map(Value::as_object_mut) {
                    choice.remove("unevaluatedProperties");
                }
            }
        }
        schemas.insert(name.to_string(), copy);
    }
}

/// The suffix of a component's open copy.
const OPEN: &str = "--open";

fn rewrite_composed_refs(value: &mut Value, opened: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let several = child.as_array().is_some_and(|parts| parts.len() > 1);
                if key == "allOf" && several {
                    for part in child.as_array_mut().into_iter().flatten() {
                        if let Some(Value::String(target)) = part.get_mut("$ref") {
                            if !target.ends_with(OPEN) {
                                target.push_str(OPEN);
                            }
                            opened.insert(target.clone());
                        }
                    }
                }
                rewrite_composed_refs(child, opened);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite_composed_refs(v, opened)),
        _ => {}
    }
}

/// An object schema listing its properties (or composing parts) admits no
/// others, unless it says what others may be.
fn close(map: &mut Map<String, Value>) {
    let lists = map.contains_key("properties") || map.contains_key("allOf");
    let says = map.contains_key("additionalProperties")
        || map.contains_key("unevaluatedProperties")
        || map.contains_key("patternProperties");
    if lists && !says {
        map.insert("unevaluatedProperties".into(), Value::Bool(false));
    }
}

fn make_nullable(map: &mut Map<String, Value>) {
    match map.get("type").cloned() {
        Some(Value::String(t)) => {
            map.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(choices)) = map.get_mut("enum") {
                choices.push(Value::Null);
            }
        }
        _ => {
            let inner = Value::Object(std::mem::take(map));
            map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A description of two operations in GitHub's shape.
    fn small() -> Description {
        let doc = json!({
            "openapi": "3.0.3",
            "paths": {
                "/repos/{owner}/{repo}/pulls": {
                    "get": {"operationId": "pulls/list",
                        "parameters": [{"$ref": "#/components/parameters/per-page"},
                                       {"name": "head", "in": "query", "schema": {"type": "string"}}],
                        "responses": {"200": {"content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/pull"}}}}}}},
                    "post": {"operationId": "pulls/create",
                        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"title": {"type": "string"}, "head": {"type": "string"}}, "required": ["head"]}}}},
                        "responses": {"201": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/pull"}}}},
                                      "422": {"content": {"application/json": {"schema": {"type": "object", "properties": {"message": {"type": "string"}}}}}}}}
                },
                "/repos/{owner}/{repo}/releases/latest": {"get": {"operationId": "repos/get-latest-release", "responses": {"200": {"description": "x"}}}},
                "/repos/{owner}/{repo}/releases/{release_id}": {"get": {"operationId": "repos/get-release", "responses": {"200": {"description": "x"}}}}
            },
            "components": {
                "parameters": {"per-page": {"name": "per_page", "in": "query", "schema": {"type": "integer", "maximum": 100}}},
                "schemas": {"pull": {"type": "object", "required": ["number", "merged_at"],
                    "properties": {"number": {"type": "integer"}, "merged_at": {"type": "string", "nullable": true},
                                   "user": {"allOf": [{"$ref": "#/components/schemas/user"}], "nullable": true}}},
                    "user": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}}
            }
        });
        Description::from_openapi(&doc).unwrap()
    }

    fn exchange<'a>(
        method: &'a str,
        target: &'a str,
        body: &'a [u8],
        status: u16,
        answer: &'a [u8],
    ) -> Exchange<'a> {
        Exchange {
            method,
            target,
            accept: None,
            request_body: body,
            status,
            response_body: answer,
        }
    }

    #[test]
    fn conforming_exchanges_name_their_operation() {
        let d = small();
        assert_eq!(d.operation_count(), 4);
        let answer = br#"[{"number": 1, "merged_at": null, "user": {"login": "a"}}]"#;
        assert_eq!(
            d.check(&exchange(
                "GET",
                "/repos/o/r/pulls?per_page=100&head=o%3Ab",
                b"",
                200,
                answer
            )),
            Ok("pulls/list".into())
        );
        assert_eq!(
            d.check(&exchange(
                "GET",
                "/repos/o/r/releases/latest",
                b"",
                200,
                b""
            )),
            Ok("repos/get-latest-release".into())
        );
        assert_eq!(
            d.check(&exchange("GET", "/repos/o/r/releases/7", b"", 200, b"")),
            Ok("repos/get-release".into())
        );
        // GitHub answers 401 to any operation.
        assert!(d
            .check(&exchange(
                "POST",
                "/repos/o/r/pulls",
                br#"{"head": "b"}"#,
                401,
                b"{}"
            ))
            .is_ok());
    }

    #[test]
    fn each_departure_is_named_with_the_operation_and_the_field() {
        let d = small();
        let problems = |e: Exchange<'_>| d.check(&e).unwrap_err().join("\n");
        let p = problems(exchange("GET", "/repos/o/r/pulls/1/files", b"", 200, b"[]"));
        assert!(p.contains("no operation of GitHub's description"), "{p}");
        let p = problems(exchange(
            "GET",
            "/repos/o/r/pulls?per_page=500&page_size=3",
            b"",
            200,
            b"[]",
        ));
        assert!(
            p.contains("pulls/list")
                && p.contains("`per_page=500`")
                && p.contains("`page_size` is not one"),
            "{p}"
        );
        let p = problems(exchange(
            "POST",
            "/repos/o/r/pulls",
            br#"{"title": 1, "draft": true}"#,
            201,
            br#"{"number": 1, "merged_at": null}"#,
        ));
        assert!(
            p.contains("request body") && p.contains("\"head\" is a required property"),
            "{p}"
        );
        assert!(p.contains("draft"), "an invented request field: {p}");
        let p = problems(exchange(
            "POST",
            "/repos/o/r/pulls",
            br#"{"head": "b"}"#,
            201,
            br#"{"number": "1", "invented": true}"#,
        ));
        assert!(
            p.contains("pulls/create") && p.contains("merged_at") && p.contains("invented"),
            "{p}"
        );
        let p = problems(exchange(
            "POST",
            "/repos/o/r/pulls",
            br#"{"head": "b"}"#,
            409,
            b"{}",
        ));
        assert!(
            p.contains("status 409 is not one the operation answers"),
            "{p}"
        );
        let p = problems(exchange(
            "GET",
            "/repos/o/r/pulls",
            b"",
            200,
            br#"[{"number": 1, "merged_at": null, "user": {"name": "x"}}]"#,
        ));
        assert!(p.contains("login") && p.contains("name"), "{p}");
    }

    /// The pinned description itself, fetched as the tests fetch it.
    #[test]
    fn the_pinned_description_knows_the_operations_lockstep_uses() {
        let d = github().expect("GitHub's description");
        assert!(d.operation_count() > 1000, "{d:?}");
        let id = |method: &str, target: &str| d.find(method, target).map(|op| op.id.as_str());
        assert_eq!(id("GET", "/repos/o/r/pulls"), Some("pulls/list"));
        assert_eq!(id("PATCH", "/repos/o/r/pulls/3"), Some("pulls/update"));
        assert_eq!(
            id("GET", "/repos/o/r/releases/tags/v1"),
            Some("repos/get-release-by-tag")
        );
        assert_eq!(
            id("GET", "/repos/o/r/releases/latest"),
            Some("repos/get-latest-release")
        );
        assert_eq!(
            id("POST", "/repos/o/r/releases/7/assets"),
            Some("repos/upload-release-asset")
        );
        assert_eq!(
            id("GET", "/repos/o/r/commits/abc/check-runs"),
            Some("checks/list-for-ref")
        );
        // Bounds GitHub states in words bind: at most 100 a page.
        let page = |n: u32| {
            d.check(&exchange(
                "GET",
                &format!("/repos/o/r/pulls?per_page={n}"),
                b"",
                200,
                b"[]",
            ))
        };
        assert!(page(100).is_ok());
        let problems = page(101).unwrap_err().join("\n");
        assert!(problems.contains("per_page=101"), "{problems}");
        // Enterprise Server's description has lockstep's operations, and
        // holds answers to its own schemas.
        let ghes = enterprise().expect("GHES's description");
        assert_eq!(
            ghes.find("GET", "/repos/o/r/commits/abc/check-runs")
                .map(|op| op.id.as_str()),
            Some("checks/list-for-ref")
        );
        assert!(ghes
            .check(&exchange(
                "GET",
                "/repos/o/r/releases/tags/v1",
                b"",
                200,
                br#"{"id": 1}"#
            ))
            .is_err());
        // A pull request of a few fields is not GitHub's.
        let problems = d
            .check(&exchange(
                "POST",
                "/repos/o/r/pulls",
                br#"{"title": "t", "head": "h", "base": "main"}"#,
                201,
                br#"{"number": 1, "state": "open", "invented": 1}"#,
            ))
            .unwrap_err()
            .join("\n");
        assert!(
            problems.contains("pulls/create") && problems.contains("required"),
            "{problems}"
        );
        assert!(problems.contains("invented"), "{problems}");
    }

    /// GitHub's GraphQL schema, fetched as the tests fetch it: the one
    /// document lockstep sends passes; a misspelt field, a missing
    /// selection or a variable not given does not.
    #[test]
    fn graphql_documents_are_held_to_githubs_schema() {
        let schema = graphql().expect("GitHub's GraphQL schema");
        let ready = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }";
        let body = |query: &str, variables: Value| {
            json!({"query": query, "variables": variables}).to_string()
        };
        assert_eq!(
            schema.check(body(ready, json!({"id": "PR_1"})).as_bytes()),
            Ok(())
        );
        let problems = schema
            .check(body(&ready.replace("isDraft", "isDrafty"), json!({"id": "PR_1"})).as_bytes())
            .unwrap_err();
        assert!(problems.join("\n").contains("isDrafty"), "{problems:?}");
        let problems = schema
            .check(body(&ready.replace(" { isDraft }", ""), json!({"id": "PR_1"})).as_bytes())
            .unwrap_err();
        assert!(
            problems.join("\n").contains("must have a subselection set"),
            "{problems:?}"
        );
        let problems = schema.check(body(ready, json!({})).as_bytes()).unwrap_err();
        assert!(
            problems.join("\n").contains("`$id` is not given"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_tarball_is_held_to_its_integrity() {
        let err =
            check_integrity(b"not the package", OPENAPI_INTEGRITY, OPENAPI_PACKAGE).unwrap_err();
        assert!(err.contains("not the pinned"), "{err}");
    }
}
