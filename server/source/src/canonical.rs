//! The canonical form of a kernel: the same kernel in the plain style the
//! kernel model and the structural recognizer read, whatever the author's
//! style. One rewrite, done here once, for every reader:
//!
//! - brace and parenthesis initialisation of a scalar local
//!   (`size_t const row{…};`, `int i(…);`, `for (int c{0}; …)`) becomes `= …`;
//! - an `auto` local gets the type its value has (integer promotion and the
//!   usual arithmetic conversions over the thread built-ins, literals,
//!   parameters, casts and earlier locals); a value it cannot type stays `auto`;
//! - a `constexpr` local becomes `const`;
//! - a pointer walked one element per iteration (`while (p != end) s += *p++;`,
//!   `for (; p < end; ++p) s += *p;`, `while (p < end) { s += *p; ++p; }`)
//!   becomes a counted loop over `p[kp_pw]`;
//! - a call of a `__device__` helper that only returns an expression of the
//!   thread built-ins (`global_index()`) becomes that expression.
//!
//! Every rewrite keeps the line count of the text it replaces, so lines (and
//! the findings on them) stay where they were; only columns on a rewritten
//! line move. Nothing else changes: a construct this module does not know is
//! left as written.

use crate::{FnKind, Function, SourceFile};
use std::ops::Range;
use tree_sitter::Node;

/// The canonical text of every function with a body in `text` (kernels and
/// device functions), or `None` when it is canonical already.
pub fn file(text: &str) -> Option<String> {
    let source = crate::parse(text);
    let names: Vec<usize> = (0..source.functions.len()).collect();
    rewrite(text, &source, &names)
}

/// The canonical text with only kernel `name`'s body rewritten (the first
/// kernel of that name: a template's primary definition, not its
/// specialisations), or `None` when it is canonical already.
pub fn kernel(text: &str, name: &str) -> Option<String> {
    // Every structural recipe of a node's expansion asks: rewritten once per parse_once scope.
    crate::parsed::memo("canonical::kernel", text, name, || {
        let source = crate::parse(text);
        let at = source.functions.iter().position(|f| f.kind == FnKind::Kernel && f.name == name)?;
        rewrite(text, &source, &[at])
    })
}

/// Rounds of rewriting: a rewrite may expose another (a brace-initialised
/// pointer walked by a loop).
const ROUNDS: usize = 3;

fn rewrite(text: &str, source: &SourceFile, which: &[usize]) -> Option<String> {
    let mut out = text.to_string();
    let mut changed = false;
    let names: Vec<(String, FnKind)> =
        which.iter().filter_map(|&i| source.functions.get(i)).map(|f| (f.name.clone(), f.kind)).collect();
    // Function `i` of `which` is found again by its position among functions of that name and kind.
    let ordinal: Vec<usize> = which
        .iter()
        .filter_map(|&i| {
            let f = source.functions.get(i)?;
            Some(source.functions[..i].iter().filter(|g| g.name == f.name && g.kind == f.kind).count())
        })
        .collect();
    for _ in 0..ROUNDS {
        let src = crate::parse(&out);
        let tree = crate::parse_tree(&out)?;
        let helpers = index_helpers(&src, &tree, &out);
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        for ((name, kind), ord) in names.iter().zip(&ordinal) {
            let Some(f) = src.functions.iter().filter(|g| &g.name == name && g.kind == *kind).nth(*ord) else {
                continue;
            };
            let Some(body) = body_node(&tree, f) else { continue };
            edits.extend(function_edits(&out, f, body, &helpers));
        }
        if edits.is_empty() {
            break;
        }
        changed = true;
        apply(&mut out, edits);
    }
    changed.then_some(out)
}

fn body_node<'t>(tree: &'t tree_sitter::Tree, f: &Function) -> Option<Node<'t>> {
    let (start, end) = f.body_bytes?;
    let mut node = tree.root_node().descendant_for_byte_range(start, end)?;
    while node.kind() != "compound_statement" || node.start_byte() != start {
        node = node.parent()?;
    }
    Some(node)
}

/// Applies non-overlapping edits (an edit inside another is dropped: the next round sees it).
fn apply(out: &mut String, edits: Vec<(Range<usize>, String)>) {
    let edits: Vec<_> = edits.into_iter().map(|(r, with)| (r.clone(), same_lines(&out[r], &with))).collect();
    *out = crate::syntax::edited(out, edits);
}

/// `new` with as many line breaks as `old`: missing ones appended, extra ones turned into spaces.
fn same_lines(old: &str, new: &str) -> String {
    let want = old.matches('\n').count();
    let mut have = new.matches('\n').count();
    let mut s = new.to_string();
    while have > want {
        if let Some(at) = s.rfind('\n') {
            s.replace_range(at..at + 1, " ");
        }
        have -= 1;
    }
    for _ in have..want {
        s.push('\n');
    }
    s
}

/// Every named node under `node`, itself included, in source order (tokens left out, unlike
/// [`crate::syntax::descendants`]).
fn named_descendants(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        out.push(n);
        let at = stack.len();
        stack.extend(n.named_children(&mut cursor));
        stack[at..].reverse();
    }
    out
}

fn text_of<'a>(text: &'a str, n: Node) -> &'a str {
    &text[n.byte_range()]
}

/// Every edit of one function's body.
fn function_edits(text: &str, f: &Function, body: Node, helpers: &[(String, String)]) -> Vec<(Range<usize>, String)> {
    let mut edits = Vec::new();
    let mut types = Types::new(f);
    for n in named_descendants(body) {
        match n.kind() {
            "declaration" => {
                edits.extend(declaration(text, n, &mut types));
            }
            "constexpr" | "type_qualifier" if text_of(text, n) == "constexpr" => {
                edits.push((n.byte_range(), "const".to_string()));
            }
            "while_statement" | "for_statement" => {
                if let Some(e) = pointer_walk(text, n) {
                    edits.push(e);
                }
            }
            "call_expression" => {
                let Some(fun) = n.child_by_field_name("function").filter(|x| x.kind() == "identifier") else {
                    continue;
                };
                let no_args = n.child_by_field_name("arguments").is_some_and(|a| a.named_child_count() == 0);
                if let Some((_, value)) = helpers.iter().find(|(h, _)| h == text_of(text, fun))
                    && no_args
                {
                    edits.push((n.byte_range(), format!("({value})")));
                }
            }
            _ => {}
        }
    }
    edits
}

/// The C types the rewrite knows, by name: parameters and the locals declared so far.
struct Types {
    known: Vec<(String, String)>,
}

impl Types {
    fn new(f: &Function) -> Types {
        let known = f
            .params
            .iter()
            .map(|p| {
                let ty = if p.pointer { format!("{}*", p.base.trim()) } else { p.base.trim().to_string() };
                (p.name.clone(), ty)
            })
            .collect();
        Types { known }
    }
    fn of(&self, name: &str) -> Option<&str> {
        self.known.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }
}

/// The integer and floating types by conversion rank (the usual arithmetic conversions), lowest first.
const RANKS: &[(&str, &[&str])] = &[
    (
        "int",
        &[
            "int",
            "short",
            "char",
            "signed char",
            "unsigned char",
            "unsigned short",
            "bool",
            "int32_t",
            "int16_t",
            "int8_t",
            "uint8_t",
            "uint16_t",
        ],
    ),
    ("unsigned int", &["unsigned", "unsigned int", "uint32_t"]),
    ("long", &["long", "long int", "int64_t", "ptrdiff_t", "ssize_t"]),
    ("long long", &["long long", "long long int"]),
    ("unsigned long", &["unsigned long", "size_t", "uint64_t"]),
    ("unsigned long long", &["unsigned long long"]),
    ("float", &["float"]),
    ("double", &["double"]),
];

fn rank(ty: &str) -> Option<usize> {
    let t = ty.replace("const", " ").split_whitespace().collect::<Vec<_>>().join(" ");
    RANKS.iter().position(|(_, names)| names.contains(&t.as_str()))
}

/// The type `e` has, where the rewrite can tell: the arithmetic types only.
fn type_of(text: &str, e: Node, types: &Types) -> Option<String> {
    let t = text_of(text, e).trim();
    match e.kind() {
        "parenthesized_expression" => type_of(text, e.named_child(0)?, types),
        "number_literal" => Some(
            if t.contains(['.', 'e', 'E']) && !t.starts_with("0x") {
                if t.ends_with(['f', 'F']) { "float" } else { "double" }
            } else if t.ends_with("ull") || t.ends_with("ULL") {
                "unsigned long long"
            } else if t.ends_with("ll") || t.ends_with("LL") {
                "long long"
            } else if t.ends_with(['u', 'U']) {
                "unsigned int"
            } else if t.ends_with(['l', 'L']) {
                "long"
            } else {
                "int"
            }
            .to_string(),
        ),
        "field_expression" => {
            let arg = e.child_by_field_name("argument").map(|a| text_of(text, a))?;
            ["threadIdx", "blockIdx", "blockDim", "gridDim"].contains(&arg).then(|| "unsigned int".to_string())
        }
        "identifier" => {
            let ty = types.of(t)?;
            (rank(ty).is_some() && !ty.ends_with('*')).then(|| ty.to_string())
        }
        "cast_expression" => {
            let ty = text_of(text, e.child_by_field_name("type")?);
            rank(ty).map(|_| ty.to_string())
        }
        "call_expression" => {
            // static_cast<T>(v)
            let f = e.child_by_field_name("function")?;
            let ft = text_of(text, f);
            let inner = ft.strip_prefix("static_cast<")?.strip_suffix('>')?.trim();
            rank(inner).map(|_| inner.to_string())
        }
        "subscript_expression" => {
            let arg = e.child_by_field_name("argument")?;
            let ty = types.of(text_of(text, arg))?;
            let elem = ty.strip_suffix('*')?.replace("const", " ");
            let elem = elem.trim();
            rank(elem).map(|_| elem.to_string())
        }
        "binary_expression" => {
            let op = text_of(text, e.child_by_field_name("operator")?);
            if ["<", ">", "<=", ">=", "==", "!=", "&&", "||"].contains(&op) {
                return Some("bool".to_string());
            }
            let l = type_of(text, e.child_by_field_name("left")?, types)?;
            if op == "<<" || op == ">>" {
                return Some(promoted(&l));
            }
            let r = type_of(text, e.child_by_field_name("right")?, types)?;
            let (a, b) = (promoted(&l), promoted(&r));
            let (ra, rb) = (rank(&a)?, rank(&b)?);
            Some(if ra >= rb { a } else { b })
        }
        "unary_expression" => {
            let op = text_of(text, e.child_by_field_name("operator")?);
            let arg = type_of(text, e.child_by_field_name("argument")?, types)?;
            Some(if op == "!" { "bool".to_string() } else { promoted(&arg) })
        }
        _ => None,
    }
}

/// Integer promotion: every type of lower rank than `int` is `int`; named types by their rank's name.
fn promoted(ty: &str) -> String {
    match rank(ty) {
        Some(0) => "int".to_string(),
        Some(r)
            if ty.trim() == "size_t"
                || ty.trim() == "int64_t"
                || ty.trim() == "uint64_t"
                || ty.trim() == "uint32_t" =>
        {
            let _ = r;
            ty.trim().to_string()
        }
        Some(r) => RANKS[r].0.to_string(),
        None => ty.to_string(),
    }
}

/// Edits of one declaration: brace/paren initialisers and `auto`; records the declared types.
fn declaration(text: &str, d: Node, types: &mut Types) -> Vec<(Range<usize>, String)> {
    let mut edits = Vec::new();
    let Some(ty_node) = d.child_by_field_name("type") else { return edits };
    let ty = text_of(text, ty_node).to_string();
    let is_auto = ty_node.kind() == "placeholder_type_specifier" || ty == "auto";
    let mut cursor = d.walk();
    let decls: Vec<Node> = d.children_by_field_name("declarator", &mut cursor).collect();
    let mut auto_types: Vec<String> = Vec::new();
    for decl in &decls {
        let declared = match decl.kind() {
            "init_declarator" => decl.child_by_field_name("declarator"),
            _ => Some(*decl),
        };
        let name = declared.filter(|n| n.kind() == "identifier").map(|n| text_of(text, n).to_string());
        let pointer = declared.is_some_and(|n| n.kind() == "pointer_declarator");
        let pname = declared
            .filter(|n| n.kind() == "pointer_declarator")
            .and_then(|n| n.child_by_field_name("declarator"))
            .filter(|n| n.kind() == "identifier")
            .map(|n| text_of(text, n).to_string());
        let mut value_expr = None;
        if decl.kind() == "init_declarator"
            && let Some(value) = decl.child_by_field_name("value")
        {
            let single = match value.kind() {
                "initializer_list" | "argument_list" if value.named_child_count() == 1 => value.named_child(0),
                _ => None,
            };
            let scalar = name.is_some() || pointer;
            if let Some(inner) = single.filter(|i| i.kind() != "initializer_list" && i.kind() != "initializer_pair")
                && scalar
            {
                // `x{v}` / `x(v)` → `x = v`: from the declarator's end to the value's end.
                let from = declared.map(|n| n.end_byte()).unwrap_or(value.start_byte());
                edits.push((from..value.end_byte(), format!(" = {}", text_of(text, inner))));
                value_expr = Some(inner);
            } else if !matches!(value.kind(), "initializer_list" | "argument_list") {
                value_expr = Some(value);
            }
        }
        if is_auto {
            match value_expr.and_then(|v| type_of(text, v, types)) {
                Some(t) if t != "bool" => auto_types.push(t),
                _ => auto_types.push(String::new()),
            }
        }
        if let Some(n) = name.or(pname) {
            let t = if is_auto { auto_types.last().cloned().unwrap_or_default() } else { ty.clone() };
            types.known.push((n, if pointer { format!("{t}*") } else { t }));
        }
    }
    if is_auto && !auto_types.is_empty() && auto_types.iter().all(|t| !t.is_empty() && *t == auto_types[0]) {
        edits.push((ty_node.byte_range(), auto_types[0].clone()));
    }
    edits
}

/// `__device__` functions with no parameters whose body is `return E;` with E an expression of the thread built-ins only.
fn index_helpers(src: &SourceFile, tree: &tree_sitter::Tree, text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in src.functions.iter().filter(|f| matches!(f.kind, FnKind::Device | FnKind::HostDevice)) {
        if !f.params.is_empty() || f.is_template {
            continue;
        }
        let Some(body) = body_node(tree, f) else { continue };
        let [ret] = named(body)[..] else { continue };
        if ret.kind() != "return_statement" {
            continue;
        }
        let Some(e) = ret.named_child(0) else { continue };
        let pure = named_descendants(e).iter().all(|n| match n.kind() {
            "field_expression" => n
                .child_by_field_name("argument")
                .is_some_and(|a| ["threadIdx", "blockIdx", "blockDim", "gridDim"].contains(&text_of(text, a))),
            "identifier" => ["threadIdx", "blockIdx", "blockDim", "gridDim"].contains(&text_of(text, *n)),
            "field_identifier" | "number_literal" | "binary_expression" | "parenthesized_expression" => true,
            "cast_expression" | "type_descriptor" | "primitive_type" | "sized_type_specifier" => true,
            _ => false,
        });
        if pure {
            out.push((f.name.clone(), text_of(text, e).to_string()));
        }
    }
    out
}

fn named(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    n.named_children(&mut c).filter(|x| x.kind() != "comment").collect()
}

/// The identifier `p` of `p++`, `++p`, `p += 1`, `p = p + 1` as a statement or update, else `None`.
fn unit_step<'a>(text: &'a str, e: Node) -> Option<&'a str> {
    let e = if e.kind() == "expression_statement" { e.named_child(0)? } else { e };
    match e.kind() {
        "update_expression" => {
            let arg = e.child_by_field_name("argument").filter(|a| a.kind() == "identifier")?;
            text_of(text, e).contains("++").then(|| text_of(text, arg))
        }
        "assignment_expression" => {
            let l = e.child_by_field_name("left").filter(|a| a.kind() == "identifier")?;
            let op = text_of(text, e.child_by_field_name("operator")?);
            let r: String = text_of(text, e.child_by_field_name("right")?).split_whitespace().collect();
            let p = text_of(text, l);
            ((op == "+=" && r == "1") || (op == "=" && (r == format!("{p}+1") || r == format!("1+{p}")))).then_some(p)
        }
        _ => None,
    }
}

/// A loop walking pointer `p` one element per iteration, rewritten as a counted loop over `p[kp_pw]`:
/// `while (p != end) S` / `while (p < end) S` with exactly one `*p++` in S, or one `++p` as S's last
/// statement; `for (; p != end; ++p) S`. `p` must not be read after the loop (it no longer moves).
fn pointer_walk(text: &str, lp: Node) -> Option<(Range<usize>, String)> {
    let body = lp.child_by_field_name("body")?;
    let cond = lp.child_by_field_name("condition")?;
    let cond = if cond.kind() == "condition_clause" { cond.child_by_field_name("value")? } else { cond };
    let mut cond = cond;
    while cond.kind() == "parenthesized_expression" {
        cond = cond.named_child(0)?;
    }
    if cond.kind() != "binary_expression" {
        return None;
    }
    let op = text_of(text, cond.child_by_field_name("operator")?);
    if op != "!=" && op != "<" {
        return None;
    }
    let p_node = cond.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
    let p = text_of(text, p_node);
    let end = cond.child_by_field_name("right")?;
    let end_text = text_of(text, end);
    // p must be a declared pointer local of the enclosing function.
    let func = {
        let mut n = lp;
        while n.kind() != "function_definition" {
            n = n.parent()?;
        }
        n
    };
    let is_pointer_local = named_descendants(func).into_iter().any(|d| {
        d.kind() == "pointer_declarator"
            && d.child_by_field_name("declarator").is_some_and(|x| x.kind() == "identifier" && text_of(text, x) == p)
    }) || named_descendants(func).into_iter().any(|d| {
        d.kind() == "parameter_declaration"
            && text_of(text, d).contains('*')
            && named_descendants(d).iter().any(|x| x.kind() == "identifier" && text_of(text, *x) == p)
    });
    if !is_pointer_local {
        return None;
    }
    let k = "kp_pw";
    if named_descendants(func).iter().any(|d| d.kind() == "identifier" && text_of(text, *d) == k) {
        return None;
    }
    // Where p moves: the for's update, a trailing `++p;`, or one `*p++` in the body.
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut moves = 0;
    let (head_end, body_start) = (body.start_byte(), body.start_byte());
    let _ = head_end;
    if lp.kind() == "for_statement" {
        if lp.child_by_field_name("initializer").is_some() {
            return None;
        }
        match lp.child_by_field_name("update") {
            Some(u) if unit_step(text, u) == Some(p) => moves += 1,
            Some(_) => return None,
            None => {}
        }
    }
    let stmts: Vec<Node> = if body.kind() == "compound_statement" { named(body) } else { vec![body] };
    let mut trailing = None;
    if let Some(last) = stmts.last()
        && unit_step(text, *last) == Some(p)
        && body.kind() == "compound_statement"
    {
        moves += 1;
        trailing = Some(*last);
    }
    let mut derefs = Vec::new();
    for d in named_descendants(body) {
        if trailing.is_some_and(|t| t.byte_range().contains(&d.start_byte())) {
            continue;
        }
        if d.kind() == "identifier" && text_of(text, d) == p {
            let parent = d.parent()?;
            // `*p++`
            if parent.kind() == "update_expression" && text_of(text, parent).contains("++") {
                let deref = parent
                    .parent()
                    .filter(|g| g.kind() == "pointer_expression" && text_of(text, *g).starts_with('*'))?;
                // Executed once per iteration: not under a branch, loop or short-circuit inside the body.
                let mut a = deref.parent()?;
                while a.id() != body.id() {
                    if matches!(
                        a.kind(),
                        "if_statement"
                            | "for_statement"
                            | "while_statement"
                            | "do_statement"
                            | "conditional_expression"
                    ) || (a.kind() == "binary_expression"
                        && a.child_by_field_name("operator").is_some_and(|o| matches!(text_of(text, o), "&&" | "||")))
                    {
                        return None;
                    }
                    a = a.parent()?;
                }
                moves += 1;
                derefs.push((deref.byte_range(), format!("{p}[{k}]")));
            } else if parent.kind() == "pointer_expression" && text_of(text, parent).starts_with('*') {
                derefs.push((parent.byte_range(), format!("{p}[{k}]")));
            } else if parent.kind() == "subscript_expression" {
                // p[j] → p[kp_pw + j]
                let idx = parent.child_by_field_name("index").or_else(|| parent.named_child(1))?;
                let idx = if idx.kind() == "subscript_argument_list" { idx.named_child(0)? } else { idx };
                derefs.push((parent.byte_range(), format!("{p}[{k} + ({})]", text_of(text, idx))));
            } else {
                return None;
            }
        }
        if matches!(d.kind(), "break_statement" | "continue_statement" | "return_statement" | "goto_statement") {
            return None;
        }
    }
    if moves != 1 {
        return None;
    }
    // The end must not move either, nor be written in the loop.
    if named_descendants(body).iter().any(|d| d.kind() == "identifier" && text_of(text, *d) == end_text) {
        return None;
    }
    // p is not read after the loop.
    let after = lp.end_byte();
    if named_descendants(func)
        .iter()
        .any(|d| d.start_byte() >= after && d.kind() == "identifier" && text_of(text, *d) == p)
    {
        return None;
    }
    // The new loop, the body's text with the derefs replaced.
    let mut body_text = text_of(text, body).to_string();
    let base = body.start_byte();
    let mut all = derefs;
    if let Some(t) = trailing {
        all.push((t.byte_range(), String::new()));
    }
    all.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    for (r, with) in all {
        body_text.replace_range(r.start - base..r.end - base, &with);
    }
    let _ = body_start;
    let _ = &mut edits;
    let bound = walk_length(text, func, lp, p, end).unwrap_or_else(|| format!("({end_text}) - {p}"));
    let header = format!("for (long long {k} = 0; {k} < {bound}; ++{k}) ");
    Some((lp.byte_range(), format!("{header}{body_text}")))
}

/// The value a pointer local is declared with, when it is assigned nowhere else in the function.
fn pointer_init<'t>(text: &str, func: Node<'t>, name: &str) -> Option<Node<'t>> {
    let mut init = None;
    for d in named_descendants(func) {
        match d.kind() {
            "init_declarator" => {
                let decl = d.child_by_field_name("declarator")?;
                let declared =
                    if decl.kind() == "pointer_declarator" { decl.child_by_field_name("declarator") } else { None };
                if declared.is_some_and(|x| x.kind() == "identifier" && text_of(text, x) == name) {
                    if init.is_some() {
                        return None;
                    }
                    init = d.child_by_field_name("value");
                }
            }
            "assignment_expression" if d.child_by_field_name("left").is_some_and(|l| text_of(text, l) == name) => {
                return None;
            }
            _ => {}
        }
    }
    init
}

/// `(base, offset)` of a pointer value `base + offset` (`base` alone: offset `0`).
fn base_offset(text: &str, v: Node) -> Option<(String, String)> {
    let mut v = v;
    while v.kind() == "parenthesized_expression" {
        v = v.named_child(0)?;
    }
    match v.kind() {
        "identifier" => Some((text_of(text, v).to_string(), "0".to_string())),
        "binary_expression" if v.child_by_field_name("operator").is_some_and(|o| text_of(text, o) == "+") => {
            let l = v.child_by_field_name("left")?;
            let r = v.child_by_field_name("right")?;
            let (b, o) = base_offset(text, l)?;
            let o = if o == "0" { text_of(text, r).to_string() } else { format!("{o} + {}", text_of(text, r)) };
            Some((b, o))
        }
        _ => None,
    }
}

/// The element count a walk from `p` to `end` covers, from their declarations (`end = p + n`: `n`;
/// `p = x + a`, `end = x + b`: `(b) - (a)`), when both are declared once and never assigned.
fn walk_length(text: &str, func: Node, lp: Node, p: &str, end: Node) -> Option<String> {
    let end = if end.kind() == "identifier" {
        let e = pointer_init(text, func, text_of(text, end))?;
        if e.start_byte() > lp.start_byte() {
            return None;
        }
        e
    } else {
        end
    };
    let (eb, eo) = base_offset(text, end)?;
    if eb == p {
        return Some(eo);
    }
    let pi = pointer_init(text, func, p)?;
    let (pb, po) = base_offset(text, pi)?;
    if pb != eb {
        return None;
    }
    Some(if po == "0" { eo } else { format!("({eo}) - ({po})") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> String {
        file(text).unwrap_or_else(|| text.to_string())
    }

    #[test]
    fn brace_paren_auto_constexpr() {
        let src = "__global__ void k(float* y, const float* x, int n) {\n  size_t const i{blockIdx.x * blockDim.x + threadIdx.x};\n  int j(3);\n  const auto r = blockIdx.x * blockDim.x + threadIdx.x;\n  auto v = x[i];\n  constexpr float s = 2.0f;\n  for (int c{0}; c < n; ++c) y[i] += v * s;\n}\n";
        let got = body(src);
        assert_eq!(
            got,
            "__global__ void k(float* y, const float* x, int n) {\n  size_t const i = blockIdx.x * blockDim.x + threadIdx.x;\n  int j = 3;\n  const unsigned int r = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = x[i];\n  const float s = 2.0f;\n  for (int c = 0; c < n; ++c) y[i] += v * s;\n}\n"
        );
        assert_eq!(file(&got), None, "idempotent");
    }

    #[test]
    fn pointer_walks_become_counted_loops() {
        let src = "__global__ void k(float* y, const float* x, int n) {\n  const float* p = x + threadIdx.x * n;\n  const float* end = p + n;\n  float s = 0;\n  while (p != end) s += *p++;\n  y[threadIdx.x] = s;\n}\n";
        let got = body(src);
        assert!(got.contains("for (long long kp_pw = 0; kp_pw < n; ++kp_pw) s += p[kp_pw];"), "{got}");
        let src = "__global__ void k(float* y, const float* x, int n) {\n  const float* p = x;\n  const float* end = x + n;\n  float s = 0;\n  for (; p < end; ++p) {\n    s += *p;\n  }\n  y[0] = s;\n}\n";
        let got = body(src);
        assert!(got.contains("for (long long kp_pw = 0; kp_pw < n; ++kp_pw) {\n    s += p[kp_pw];\n  }"), "{got}");
        assert_eq!(got.lines().count(), src.lines().count());
        // p read after the loop: left alone.
        let src = "__global__ void k(float* y, const float* x, int n) {\n  const float* p = x;\n  const float* end = x + n;\n  while (p != end) y[0] += *p++;\n  y[1] = *p;\n}\n";
        assert_eq!(file(src), None);
    }

    #[test]
    fn index_helpers_are_inlined() {
        let src = "__device__ int gid() { return blockIdx.x * blockDim.x + threadIdx.x; }\n__global__ void k(float* y) {\n  int i = gid();\n  y[i] = 0;\n}\n";
        let got = body(src);
        assert!(got.contains("int i = (blockIdx.x * blockDim.x + threadIdx.x);"), "{got}");
    }
}
