//! The scenario's calls and their parameters: generators (ranges, choices, random values,
//! pools and ranges below the sampled head) and the templates that put them into params,
//! HTTP paths and bodies.

use super::*;

/// A generator of block numbers or slots relative to the sampled head.
pub(super) fn head_generator(
    name: &str,
    text: &str,
    hex: bool,
    spec: &GeneratorSpec,
    pools: Option<&Pools>,
    window: u64,
) -> Result<Generator, String> {
    let others = [spec.range.is_some(), spec.hex_range.is_some(), spec.choice.is_some()]
        .into_iter()
        .chain([spec.random_hex.is_some(), spec.random_base58.is_some()])
        .filter(|&given| given)
        .count();
    if others > 0 {
        return Err(format!("generator '{name}' has more than one kind; give exactly one"));
    }
    let (back_low, back_high) =
        parse_head_range(text).map_err(|message| format!("generator '{name}': {message}"))?;
    let Some(pools) = pools else {
        return Err(format!("generator '{name}' is relative to the head, but the target was not sampled"));
    };
    // A sample that stopped short of its window met the start of the node's history (a pruned
    // node): the range shrinks to what the node has. A full window says nothing of older blocks.
    let sampled = pools.head.saturating_sub(pools.oldest).saturating_add(1);
    let floor = if sampled < window { pools.oldest.min(pools.head) } else { 0 };
    let low = pools.head.saturating_sub(back_low).max(floor);
    let high = pools.head.saturating_sub(back_high).max(low);
    Ok(if hex { Generator::HexQuantityRange { low, high } } else { Generator::IntRange { low, high } })
}

/// A generator drawing uniformly from a sampled pool; `None` when the pool is empty (the node
/// had none of those values in the sampled blocks), so the calls that draw on it are left out.
pub(super) fn pool_generator(
    name: &str,
    pool: &str,
    spec: &GeneratorSpec,
    pools: Option<&Pools>,
) -> Result<Option<Generator>, String> {
    if spec.range.is_some()
        || spec.hex_range.is_some()
        || spec.choice.is_some()
        || spec.random_hex.is_some()
        || spec.random_base58.is_some()
    {
        return Err(format!("generator '{name}' has more than one kind; give exactly one"));
    }
    let Some(pools) = pools else {
        return Err(format!("generator '{name}' draws from pool '{pool}', but no pools were sampled"));
    };
    match pools.get(pool) {
        None => Err(format!(
            "generator '{name}': a {} node has no pool '{pool}' (pools: {})",
            pools.chain,
            pools.chain.pools().join(", ")
        )),
        Some([]) => Ok(None),
        Some(values) => Ok(Some(Generator::Choice(values.to_vec()))),
    }
}

/// The span of the first line that starts a table or key named `key`, for errors about it.
pub(super) fn find_key(text: &str, key: &str) -> Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(&format!("[{key}")) || trimmed.starts_with(key) {
            let start = offset + (line.len() - trimmed.len());
            return start..start;
        }
        offset += line.len();
    }
    0..0
}

pub(super) fn generator(name: &str, spec: &GeneratorSpec) -> Result<Generator, String> {
    let mut found = Vec::new();
    if let Some([low, high]) = spec.range {
        found.push(Generator::IntRange { low, high });
    }
    if let Some([low, high]) = spec.hex_range {
        found.push(Generator::HexQuantityRange { low, high });
    }
    if let Some(values) = &spec.choice {
        let values = values
            .iter()
            .map(|value| serde_json::to_value(value).map_err(|err| format!("generator '{name}': {err}")))
            .collect::<Result<Vec<_>, _>>()?;
        found.push(Generator::Choice(values));
    }
    if let Some(bytes) = spec.random_hex {
        found.push(Generator::RandomHex(bytes));
    }
    if let Some(bytes) = spec.random_base58 {
        found.push(Generator::RandomBase58(bytes));
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!(
            "generator '{name}' needs one of range, hex_range, choice, random_hex, random_base58, pool, head, head_hex"
        )),
        _ => Err(format!("generator '{name}' has more than one kind; give exactly one")),
    }
}

/// Converts TOML params to a template, replacing `"{name}"` strings with generators.
impl ScenarioDraft {
    /// One `[[call]]`: a JSON-RPC call (`method`, `params`) or a plain HTTP call (`http`,
    /// `body`, `headers`, `expect`), with its errors at the key at fault.
    pub(super) fn build_call(
        &self,
        call: &CallSection,
        generators: &BTreeMap<String, Generator>,
    ) -> Result<Call, ScenarioError> {
        let at = |span: Range<usize>, message: String| self.at(span, message);
        let weight = call.weight.as_ref().map_or(1, |w| *w.get_ref());
        let weight_span = call.weight.as_ref().map(Spanned::span);
        match (&call.method, &call.http) {
            (Some(method), None) => {
                for (key, present) in [
                    ("body", call.body.as_ref().map(Spanned::span)),
                    ("headers", call.headers.as_ref().map(Spanned::span)),
                    ("expect", call.expect.as_ref().map(Spanned::span)),
                ] {
                    if let Some(span) = present {
                        return Err(at(
                            span,
                            format!("{key} goes with an HTTP call (http = \"GET /path\"), not with method"),
                        ));
                    }
                }
                let params = match &call.params {
                    Some(params) => {
                        Some(param_value(params.get_ref(), generators).map_err(|m| at(params.span(), m))?)
                    }
                    None => None,
                };
                let name = call.name.clone().unwrap_or_else(|| method.get_ref().clone());
                let span = weight_span.unwrap_or(method.span());
                Call::new(name, method.get_ref(), params.as_ref(), weight).map_err(|err| at(span, err.0))
            }
            (None, Some(http)) => {
                if let Some(params) = &call.params {
                    return Err(at(
                        params.span(),
                        "params go with a JSON-RPC call (method); an HTTP call has a body".into(),
                    ));
                }
                let (method_name, path) = http.get_ref().trim().split_once(' ').ok_or_else(|| {
                    at(
                        http.span(),
                        format!(
                            "'{}': expected \"METHOD /path\", such as \"GET /block/{{n}}\"",
                            http.get_ref()
                        ),
                    )
                })?;
                let method = HttpMethod::parse(method_name.trim()).ok_or_else(|| {
                    let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                    at(http.span(), format!("'{method_name}' is not an HTTP method ({})", known.join(", ")))
                })?;
                let path = template_pieces(path.trim(), generators).map_err(|m| at(http.span(), m))?;
                let body = match &call.body {
                    None => HttpBody::Empty,
                    Some(body) => match body.get_ref() {
                        toml::Value::String(text) => {
                            HttpBody::Text(template_pieces(text, generators).map_err(|m| at(body.span(), m))?)
                        }
                        value => {
                            HttpBody::Json(param_value(value, generators).map_err(|m| at(body.span(), m))?)
                        }
                    },
                };
                let expect_json = match &call.expect {
                    None => false,
                    Some(expect) if expect.get_ref() == "json" => true,
                    Some(expect) => {
                        return Err(at(
                            expect.span(),
                            format!("expect: '{}' is not known (\"json\")", expect.get_ref()),
                        ))
                    }
                };
                let headers = call
                    .headers
                    .as_ref()
                    .map(|headers| headers.get_ref().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                let spec = HttpRequestSpec { method, path, headers, body, expect_json };
                let span = weight_span.unwrap_or(http.span());
                Call::http(call.name.clone(), &spec, weight).map_err(|err| at(span, err.0))
            }
            (Some(method), Some(_)) => {
                Err(at(method.span(), "a call has either method (JSON-RPC) or http, not both".into()))
            }
            (None, None) => Err(at(
                self.file.calls.as_ref().map_or(0..0, Spanned::span),
                "a [[call]] needs method (JSON-RPC) or http (\"GET /path\")".into(),
            )),
        }
    }
}

/// The generators a call draws on: `"{name}"` strings in its params or JSON body, and
/// `{name}` pieces of its HTTP path or text body.
pub(super) fn generators_drawn(call: &CallSection) -> BTreeSet<String> {
    fn in_value(value: &toml::Value, names: &mut BTreeSet<String>) {
        match value {
            toml::Value::String(text) if text.starts_with('{') && text.ends_with('}') && text.len() > 2 => {
                names.insert(text[1..text.len() - 1].to_string());
            }
            toml::Value::Array(items) => items.iter().for_each(|item| in_value(item, names)),
            toml::Value::Table(table) => table.values().for_each(|item| in_value(item, names)),
            _ => {}
        }
    }
    fn in_template(text: &str, names: &mut BTreeSet<String>) {
        let mut rest = text;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with("{{")
                || rest[open..].starts_with("}}")
                || rest.as_bytes()[open] == b'}'
            {
                rest = &rest[(open + 2).min(rest.len())..];
                continue;
            }
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { return };
            names.insert(after[..close].to_string());
            rest = &after[close + 1..];
        }
    }
    let mut names = BTreeSet::new();
    if let Some(params) = &call.params {
        in_value(params.get_ref(), &mut names);
    }
    if let Some(http) = &call.http {
        in_template(http.get_ref(), &mut names);
    }
    match call.body.as_ref().map(Spanned::get_ref) {
        Some(toml::Value::String(text)) => in_template(text, &mut names),
        Some(value) => in_value(value, &mut names),
        None => {}
    }
    names
}

/// Splits a template (`/block/{block}`) into text and generated pieces; `{{` and `}}` are
/// literal braces.
pub(super) fn template_pieces(
    text: &str,
    generators: &BTreeMap<String, Generator>,
) -> Result<Vec<TemplatePiece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(['{', '}']) {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if rest[open..].starts_with("{{") || rest[open..].starts_with("}}") {
            literal.push_str(&rest[open..open + 1]);
            rest = &rest[open + 2..];
            continue;
        }
        if rest.as_bytes()[open] == b'}' {
            return Err(format!("'{text}': a '}}' without its '{{' (write '}}}}' for a brace)"));
        }
        let close = after.find('}').ok_or_else(|| format!("'{text}': a '{{' without its '}}'"))?;
        let name = &after[..close];
        let generator = generators
            .get(name)
            .ok_or_else(|| format!("'{text}': no generator named '{name}' (define it under [generators])"))?;
        if !literal.is_empty() {
            pieces.push(TemplatePiece::Text(std::mem::take(&mut literal)));
        }
        pieces.push(TemplatePiece::Generated(generator.clone()));
        rest = &after[close + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() || pieces.is_empty() {
        pieces.push(TemplatePiece::Text(literal));
    }
    Ok(pieces)
}

pub(super) fn param_value(
    value: &toml::Value,
    generators: &BTreeMap<String, Generator>,
) -> Result<ParamValue, String> {
    Ok(match value {
        toml::Value::String(text) if text.starts_with('{') && text.ends_with('}') && text.len() > 2 => {
            let name = &text[1..text.len() - 1];
            match generators.get(name) {
                Some(generator) => ParamValue::Generated(generator.clone()),
                None => return Err(format!("no generator named '{name}' (define it under [generators])")),
            }
        }
        toml::Value::Array(items) => ParamValue::Array(
            items.iter().map(|item| param_value(item, generators)).collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => ParamValue::Object(
            table
                .iter()
                .map(|(key, item)| Ok((key.clone(), param_value(item, generators)?)))
                .collect::<Result<_, String>>()?,
        ),
        toml::Value::Datetime(_) => return Err("dates are not JSON: write them as strings".into()),
        other => ParamValue::Fixed(serde_json::to_value(other).map_err(|err| err.to_string())?),
    })
}
