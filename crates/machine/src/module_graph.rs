//! The crate's file-level import graph must have no cycle (issue 13: "no module of `machine`
//! imports one that imports it back").
//!
//! Why a test and not a convention: a cycle is what made every memory system depend on the
//! event loop and the event loop on every memory system, so a new preset had to edit `sim.rs`.
//! The test reads the crate's own sources, builds the graph "file A names an item of file B"
//! and fails naming the cycle (with the line that makes each edge).
//!
//! What counts as a reference from file A to file B:
//! - a path starting with `crate::`, `super::` or `self::`, in a `use` (groups expanded) or in
//!   code, resolved to the longest module prefix that is a file;
//! - a path starting with the name of a child module A declares (`use pipeline::Ps` in
//!   `cpu/mod.rs`) or with a name A imported by `use` (`use crate::cpu::tlb;` then `tlb::X`).
//!
//! What does not: declaring a submodule (`mod x;`), a reference to an item of the same file,
//! and test code (`#[cfg(test)]` items and the files of `#[cfg(test)] mod x;`), which may use
//! the whole machine to exercise one part. Inline modules other than tests are treated as part
//! of their file (the crate has one, `probe::kind`, which imports nothing).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Punct(char),
}

/// Tokens of a Rust source with their line numbers; comments, strings, chars and lifetimes
/// dropped (they cannot hold a module path that matters).
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let n = b.len();
    while i < n {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && i + 1 < n && b[i + 1] == '/' {
            while i < n && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && i + 1 < n && b[i + 1] == '*' {
            let mut depth = 0;
            while i < n {
                if b[i] == '/' && i + 1 < n && b[i + 1] == '*' {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && i + 1 < n && b[i + 1] == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && i + 1 < n
            && (b[i + 1] == '"' || (b[i + 1] == '#' && raw_start(&b, i + 1)))
        {
            // Raw string r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1; // opening quote
            loop {
                if b[j] == '\n' {
                    line += 1;
                }
                if b[j] == '"' && (0..hashes).all(|k| j + 1 + k < n && b[j + 1 + k] == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == '"' || (c == 'b' && i + 1 < n && b[i + 1] == '"') {
            i += if c == 'b' { 2 } else { 1 };
            while i < n && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < n && b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if i + 2 < n && b[i + 1] == '\\' {
                i += 2;
                while i < n && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if i + 2 < n && b[i + 2] == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphanumeric() || c == '_' {
            let s = i;
            while i < n && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[s..i].iter().collect()), line));
        } else if c == ':' && i + 1 < n && b[i + 1] == ':' {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

fn raw_start(b: &[char], mut j: usize) -> bool {
    while j < b.len() && b[j] == '#' {
        j += 1;
    }
    j < b.len() && b[j] == '"'
}

fn is_ident(t: Option<&(Tok, usize)>, s: &str) -> bool {
    matches!(t, Some((Tok::Ident(x), _)) if x == s)
}
fn is_punct(t: Option<&(Tok, usize)>, c: char) -> bool {
    matches!(t, Some((Tok::Punct(x), _)) if *x == c)
}

/// Index just past the attribute `#[...]` starting at `i`.
fn skip_attr(t: &[(Tok, usize)], mut i: usize) -> usize {
    let mut depth = 0;
    i += 1;
    while i < t.len() {
        match t[i].0 {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Index just past the item starting at `i` (up to its `;` or its closing brace).
fn skip_item(t: &[(Tok, usize)], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < t.len() {
        match &t[i].0 {
            Tok::Punct('(') | Tok::Punct('[') => depth += 1,
            Tok::Punct(')') | Tok::Punct(']') => depth -= 1,
            Tok::Punct(';') if depth == 0 => return i + 1,
            Tok::Punct('{') if depth == 0 => {
                let mut d = 0;
                while i < t.len() {
                    match t[i].0 {
                        Tok::Punct('{') => d += 1,
                        Tok::Punct('}') => {
                            d -= 1;
                            if d == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// One source file: its module path and the parsed facts the graph needs.
struct File {
    rel: String,
    module: Vec<String>,
    /// Child modules declared here only under `#[cfg(test)]`.
    test_children: BTreeSet<String>,
    /// Referenced module paths (absolute, as written after resolving crate/super/self/child
    /// and use aliases), with the line of the reference.
    refs: Vec<(Vec<String>, usize)>,
}

fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    let last = parts.last().cloned().unwrap_or_default();
    if last == "mod" || (parts.len() == 1 && last == "lib") {
        parts.pop();
    }
    parts
}

/// Expands a `use` tree starting at `i` (after `use`) into full paths; returns the index past `;`.
fn use_tree(
    t: &[(Tok, usize)],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String)>,
) -> usize {
    let mut path = prefix.to_vec();
    loop {
        match t.get(i).map(|x| &x.0) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                i += 1;
            }
            Some(Tok::Path) => i += 1,
            Some(Tok::Punct('*')) => {
                out.push((path.clone(), String::new()));
                return i + 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match t.get(i).map(|x| &x.0) {
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(t, i, &path, out),
                    }
                }
            }
            _ => break,
        }
    }
    // `a::b::self` names `a::b`; `as x` renames.
    let mut alias = path.last().cloned().unwrap_or_default();
    if alias == "self" {
        path.pop();
        alias = path.last().cloned().unwrap_or_default();
    }
    if is_ident(t.get(i), "as") {
        if let Some((Tok::Ident(a), _)) = t.get(i + 1) {
            alias = a.clone();
        }
        i += 2;
    }
    out.push((path, alias));
    i
}

fn parse(rel: &str, src: &str) -> File {
    let module = module_of(rel);
    let t = tokens(src);
    // Pass 1: drop test items, note child modules.
    let mut kept = Vec::with_capacity(t.len());
    let (mut children, mut test_children) = (BTreeSet::new(), BTreeSet::new());
    let mut i = 0;
    while i < t.len() {
        let cfg_test = is_punct(t.get(i), '#')
            && is_punct(t.get(i + 1), '[')
            && is_ident(t.get(i + 2), "cfg")
            && is_punct(t.get(i + 3), '(')
            && is_ident(t.get(i + 4), "test")
            && is_punct(t.get(i + 5), ')');
        if cfg_test {
            let mut j = i + 7;
            while is_punct(t.get(j), '#') {
                j = skip_attr(&t, j);
            }
            let start = j;
            let end = skip_item(&t, j);
            if let Some(k) = (start..end).find(|&k| is_ident(t.get(k), "mod")) {
                if let Some((Tok::Ident(name), _)) = t.get(k + 1) {
                    test_children.insert(name.clone());
                }
            }
            i = end;
            continue;
        }
        if is_ident(t.get(i), "mod") {
            if let (Some((Tok::Ident(name), _)), true) = (t.get(i + 1), is_punct(t.get(i + 2), ';'))
            {
                children.insert(name.clone());
            }
        }
        kept.push(t[i].clone());
        i += 1;
    }
    let t = kept;
    // Pass 2: `use` trees (recording aliases), then every other path.
    let mut uses: Vec<(Vec<String>, String, usize)> = Vec::new();
    let mut in_use = vec![false; t.len()];
    let mut i = 0;
    while i < t.len() {
        if is_ident(t.get(i), "use") {
            let line = t[i].1;
            let mut v = Vec::new();
            let end = use_tree(&t, i + 1, &[], &mut v);
            in_use[i..end.min(t.len())].fill(true);
            uses.extend(v.into_iter().map(|(p, a)| (p, a, line)));
            i = end;
        } else {
            i += 1;
        }
    }
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut refs = Vec::new();
    let resolve = |p: &[String], aliases: &BTreeMap<String, Vec<String>>| -> Option<Vec<String>> {
        let first = p.first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut m = module.clone();
                let mut k = 0;
                while p.get(k).is_some_and(|s| s == "super") {
                    m.pop();
                    k += 1;
                }
                m.extend(p[k..].iter().cloned());
                return Some(m);
            }
            s if children.contains(s) || test_children.contains(s) => {
                let mut m = module.clone();
                m.push(s.to_string());
                m
            }
            s => aliases.get(s)?.clone(),
        };
        base.extend(p[1..].iter().cloned());
        Some(base)
    };
    for (p, a, line) in &uses {
        if let Some(abs) = resolve(p, &aliases) {
            if !a.is_empty() {
                aliases.insert(a.clone(), abs.clone());
            }
            refs.push((abs, *line));
        }
    }
    let mut i = 0;
    while i < t.len() {
        let start_of_path = matches!(t[i].0, Tok::Ident(_))
            && !in_use[i]
            && !(i > 0 && t[i - 1].0 == Tok::Path)
            && t.get(i + 1).is_some_and(|x| x.0 == Tok::Path);
        if start_of_path {
            let line = t[i].1;
            let mut p = Vec::new();
            let mut j = i;
            while let Some((Tok::Ident(s), _)) = t.get(j) {
                p.push(s.clone());
                if t.get(j + 1).is_some_and(|x| x.0 == Tok::Path) {
                    j += 2;
                } else {
                    j += 1;
                    break;
                }
            }
            if let Some(abs) = resolve(&p, &aliases) {
                refs.push((abs, line));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    File {
        rel: rel.to_string(),
        module,
        test_children,
        refs,
    }
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// The graph: file → (file it references → first line of a reference).
pub(crate) fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, usize>> {
    let parsed: Vec<File> = files.iter().map(|(r, s)| parse(r, s)).collect();
    // Test-only modules, and everything under them, are not part of the graph.
    let mut test_mods: Vec<Vec<String>> = Vec::new();
    for f in &parsed {
        for c in &f.test_children {
            let mut m = f.module.clone();
            m.push(c.clone());
            test_mods.push(m);
        }
    }
    let by_module: BTreeMap<Vec<String>, &File> = parsed
        .iter()
        .filter(|f| !test_mods.iter().any(|m| f.module.starts_with(m)))
        .map(|f| (f.module.clone(), f))
        .collect();
    let mut g = BTreeMap::new();
    for f in by_module.values() {
        let edges: &mut BTreeMap<String, usize> = g.entry(f.rel.clone()).or_default();
        for (p, line) in &f.refs {
            let target = (0..=p.len())
                .rev()
                .find_map(|k| by_module.get(&p[..k]))
                .expect("lib.rs is the root");
            if target.rel != f.rel {
                let e = edges.entry(target.rel.clone()).or_insert(*line);
                *e = (*e).min(*line);
            }
        }
    }
    g
}

/// A cycle of the graph, if any, as the list of files (first repeated at the end).
pub(crate) fn find_cycle(g: &BTreeMap<String, BTreeMap<String, usize>>) -> Option<Vec<String>> {
    // Iterative-enough DFS with colours; the graph has a few dozen nodes.
    fn dfs(
        n: &str,
        g: &BTreeMap<String, BTreeMap<String, usize>>,
        colour: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        colour.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            match colour.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|x| x == m).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = dfs(m, g, colour, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        colour.insert(n.to_string(), 2);
        None
    }
    let mut colour = BTreeMap::new();
    for n in g.keys() {
        if colour.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(n, g, &mut colour, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The groups of files that import each other (strongly connected components of more than one
/// file), each with one cycle through it, so a failure lists every knot at once.
pub(crate) fn knots(g: &BTreeMap<String, BTreeMap<String, usize>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for m in g.get(&n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let all: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in g.keys() {
        if done.contains(n) || !all[n].contains(n) {
            continue;
        }
        let scc: BTreeSet<String> = all[n]
            .iter()
            .filter(|m| all[*m].contains(n))
            .cloned()
            .collect();
        done.extend(scc.iter().cloned());
        let sub: BTreeMap<String, BTreeMap<String, usize>> = scc
            .iter()
            .map(|a| {
                let e = g[a]
                    .iter()
                    .filter(|(b, _)| scc.contains(*b))
                    .map(|(b, l)| (b.clone(), *l))
                    .collect();
                (a.clone(), e)
            })
            .collect();
        out.extend(find_cycle(&sub));
    }
    out
}

fn crate_graph() -> BTreeMap<String, BTreeMap<String, usize>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    graph(&files)
}

#[test]
fn machine_modules_import_no_cycle() {
    let g = crate_graph();
    let knots = knots(&g);
    if !knots.is_empty() {
        let text: Vec<String> = knots
            .iter()
            .map(|c| {
                c.windows(2)
                    .map(|w| format!("{} (line {}) -> {}", w[0], g[&w[0]][&w[1]], w[1]))
                    .collect::<Vec<_>>()
                    .join("\n    ")
            })
            .collect();
        panic!(
            "crates/machine/src has {} import cycle(s) (file (line of the reference) -> file):\n  - {}",
            knots.len(),
            text.join("\n  - ")
        );
    }
}

#[test]
fn graph_resolves_crate_super_child_and_alias_paths() {
    let files: Vec<(String, String)> = [
        ("lib.rs", "pub mod a; pub mod b; #[cfg(test)] mod t;"),
        (
            "a/mod.rs",
            "pub mod x; use x::X; // crate::b::Y in a comment\n",
        ),
        (
            "a/x.rs",
            "use super::super::b as bb; fn f() { bb::Z; let s = \"crate::lib\"; }",
        ),
        (
            "b.rs",
            "#[cfg(test)] mod tests { use crate::a::X; } pub struct Z;",
        ),
        ("t.rs", "use crate::a::x;"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let g = graph(&files);
    let edges = |f: &str| g[f].keys().cloned().collect::<Vec<_>>();
    assert_eq!(edges("a/mod.rs"), vec!["a/x.rs"]);
    assert_eq!(edges("a/x.rs"), vec!["b.rs"]);
    assert!(edges("b.rs").is_empty(), "test modules do not count");
    assert!(
        !g.contains_key("t.rs"),
        "test-only files are not in the graph"
    );
    assert_eq!(find_cycle(&g), None);
    let mut cyclic = files.clone();
    cyclic[3].1.push_str(" use crate::a::x::f;");
    let c = find_cycle(&graph(&cyclic)).expect("b -> a/x -> b");
    assert_eq!(c.first(), c.last());
    assert!(c.contains(&"b.rs".to_string()) && c.contains(&"a/x.rs".to_string()));
}
