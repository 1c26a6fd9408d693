//! The walker that builds a [`KernelModel`]: it runs through a kernel's body
//! in source order with scoped variables, evaluates every expression to a
//! [`Poly`] (or a pointer into an array), and records loops, branches,
//! accesses and barriers as it meets them.
//!
//! Recursion follows the syntax tree, so it is bounded by [`MAX_DEPTH`]: past
//! it a value is opaque and statements are skipped, never a stack overflow.

use super::macros::{Macros, parse_int};
use super::poly::{Atom, Dep, Dim, Poly};
use super::types::{ElemType, size_of};
use super::{
    Access, AccessKind, Barrier, Branch, BranchKind, BranchSource, KernelModel, Launch, LocalArray, Loop, LoopKind,
    SharedArray, Space, Step,
};
use crate::{Function, span_of};
use kernelpro_model::Span;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

const MAX_DEPTH: usize = 128;
/// Device-function calls walked inside one another at most this deep.
const MAX_CALL_DEPTH: usize = 4;

const BARRIERS: &[&str] = &["__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"];
const LOADS: &[&str] = &["__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"];
const STORES: &[&str] = &["__stcg", "__stcs", "__stwb", "__stwt"];

/// A pointer into an array: its base, offset in elements, element type, and
/// the sizes of the dimensions still to subscript (`s[32][33]` → `[33]`).
#[derive(Debug, Clone, PartialEq)]
struct Pointer {
    base: String,
    space: Space,
    offset: Poly,
    elem: ElemType,
    inner: Vec<Poly>,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Num(Poly),
    Ptr(Pointer),
}

impl Value {
    fn dep(&self) -> Dep {
        match self {
            Value::Num(p) => p.dep(),
            Value::Ptr(p) => p.offset.dep(),
        }
    }
}

/// What an lvalue expression designates.
enum Place {
    Var(String),
    /// An element: base, space, index, element type.
    Elem(Pointer),
    /// A row of a multi-dimensional array (`s[i]` of `s[32][33]`).
    Row(Pointer),
    Unknown,
}

struct Scope<'a> {
    vars: HashMap<String, Value>,
    /// How many loops enclosed the scope when it opened: an assignment from
    /// deeper loops to one of its variables is loop-carried.
    loop_depth: usize,
    /// Variables this scope's loop treats as inductions (updates are already in their value).
    inductions: Vec<String>,
    /// A function-like macro's parameters: the argument expressions they stand for.
    args: HashMap<String, MacroArg<'a>>,
}

impl Scope<'_> {
    fn new(vars: HashMap<String, Value>, loop_depth: usize) -> Self {
        Scope { vars, loop_depth, inductions: Vec::new(), args: HashMap::new() }
    }
}

/// A macro argument as written at the call (`a[idx]` of `FETCH_FLOAT4(a[idx])`):
/// the preprocessor substitutes the text, so the body's use of the parameter
/// decides what it is (`&(p)` an address, `p` a load), evaluated where it is used.
#[derive(Clone)]
struct MacroArg<'a> {
    node: Node<'a>,
    /// The text `node` is in (the file, or an enclosing macro's body).
    src: &'a str,
    /// The use site accesses were placed on at the call.
    site: Option<(Span, String)>,
    /// Evaluated once for its accesses: a second use of the parameter records none again.
    recorded: bool,
}

struct Walker<'a> {
    src: &'a str,
    macros: &'a Macros,
    scopes: Vec<Scope<'a>>,
    model: KernelModel,
    loop_stack: Vec<usize>,
    branch_stack: Vec<usize>,
    statement: usize,
    /// Operands of a `*` being evaluated (outside indices).
    product_depth: usize,
    /// Evaluating the right side of an accumulation into a variable (`acc += …`).
    accumulating: usize,
    /// Inside a macro expansion: accesses are placed on the use site.
    site: Option<(Span, String)>,
    /// Evaluating for a value only: record nothing.
    dry: usize,
    /// A modulo of a lane-varying value seen while evaluating (its modulus).
    lane_modulo: Option<String>,
    block: Option<[u32; 3]>,
    /// The file's `__device__` functions: their bodies are walked at each
    /// call with the parameters bound to the arguments' values.
    callees: HashMap<String, (Node<'a>, Vec<crate::Param>)>,
    /// The function being walked and its callers (no recursion, bounded depth).
    calls: Vec<String>,
    /// File-scope constants and arrays: all a callee sees besides its parameters.
    file_vars: HashMap<String, Value>,
}

pub fn model_kernel(
    kernel: &Function,
    functions: &[Function],
    tree: &Tree,
    text: &str,
    macros: &Macros,
    launch: Launch,
) -> Option<KernelModel> {
    let (start, end) = kernel.body_bytes?;
    let body = tree.root_node().descendant_for_byte_range(start, end)?;
    if body.kind() != "compound_statement" {
        return None;
    }
    let block = launch.block;
    let mut w = Walker {
        src: text,
        macros,
        scopes: vec![Scope::new(HashMap::new(), 0)],
        model: KernelModel {
            name: kernel.name.clone(),
            is_kernel: kernel.kind == crate::FnKind::Kernel,
            name_span: kernel.name_span,
            launch,
            thread_values: Vec::new(),
            loops: Vec::new(),
            branches: Vec::new(),
            accesses: Vec::new(),
            shared: Vec::new(),
            local_arrays: Vec::new(),
            barriers: Vec::new(),
        },
        loop_stack: Vec::new(),
        branch_stack: Vec::new(),
        statement: 0,
        product_depth: 0,
        accumulating: 0,
        site: None,
        dry: 0,
        lane_modulo: None,
        block,
        callees: functions
            .iter()
            .filter(|f| matches!(f.kind, crate::FnKind::Device | crate::FnKind::HostDevice))
            .filter_map(|f| {
                let (s, e) = f.body_bytes?;
                let body = tree.root_node().descendant_for_byte_range(s, e)?;
                (body.kind() == "compound_statement").then(|| (f.name.clone(), (body, f.params.clone())))
            })
            .collect(),
        calls: vec![kernel.name.clone()],
        file_vars: HashMap::new(),
    };
    w.file_scope(tree.root_node());
    w.file_vars = w.scopes[0].vars.clone();
    for p in &kernel.params {
        let value = if p.pointer {
            Value::Ptr(Pointer {
                base: p.name.clone(),
                space: Space::Global,
                offset: Poly::zero(),
                elem: ElemType::new(&p.base),
                inner: Vec::new(),
            })
        } else {
            Value::Num(Poly::atom(Atom::Sym(p.name.clone())))
        };
        w.scopes[0].vars.insert(p.name.clone(), value);
    }
    w.stmt(body, 0);
    Some(w.model)
}

fn op_text<'s>(src: &'s str, node: Node) -> &'s str {
    node.child_by_field_name("operator").map(|o| &src[o.byte_range()]).unwrap_or("")
}

fn is_pointer_declarator(node: Node) -> bool {
    matches!(node.kind(), "pointer_declarator" | "abstract_pointer_declarator")
}

/// The identifier a declarator declares, and whether it declares a pointer.
fn declared_name<'t>(mut node: Node<'t>) -> (Option<Node<'t>>, bool) {
    let mut pointer = false;
    for _ in 0..16 {
        match node.kind() {
            "identifier" | "field_identifier" => return (Some(node), pointer),
            "pointer_declarator" => pointer = true,
            _ => {}
        }
        let next = node.child_by_field_name("declarator").or_else(|| {
            let mut c = node.walk();
            node.named_children(&mut c).find(|n| n.kind() == "identifier" || n.kind().ends_with("declarator"))
        });
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    (None, pointer)
}

impl<'a> Walker<'a> {
    fn text(&self, node: Node) -> &'a str {
        &self.src[node.byte_range()]
    }

    fn span(&self, node: Node) -> Span {
        self.site.as_ref().map(|(s, _)| *s).unwrap_or_else(|| span_of(node))
    }

    fn lookup(&self, name: &str) -> Option<(usize, &Value)> {
        self.scopes.iter().enumerate().rev().find_map(|(i, s)| s.vars.get(name).map(|v| (i, v)))
    }

    fn bind(&mut self, name: &str, value: Value) {
        if self.dry == 0
            && self.site.is_none()
            && self.calls.len() == 1
            && let Value::Num(p) = &value
            && p.dep() != Dep::Uniform
            && !self.model.thread_values.iter().any(|(n, _)| n == name)
        {
            self.model.thread_values.push((name.to_string(), p.clone()));
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.vars.insert(name.to_string(), value);
        }
    }

    /// Assigns to an existing variable (or declares it at kernel scope if unseen).
    fn assign(&mut self, name: &str, value: Value) {
        let depth = self.loop_stack.len();
        match self.scopes.iter_mut().rev().find(|s| s.vars.contains_key(name)) {
            Some(scope) => {
                if scope.inductions.iter().any(|n| n == name) && scope.loop_depth < depth {
                    return;
                }
                let carried = scope.loop_depth < depth;
                let old = scope.vars.get(name).cloned();
                let new = match (carried, old, value) {
                    // A loop-carried value is not one polynomial: keep only how it varies.
                    (true, Some(old), new) if old != new => {
                        let dep = old.dep().max(new.dep());
                        match new {
                            Value::Ptr(mut p) => {
                                p.offset = Poly::opaque(name, dep, false);
                                Value::Ptr(p)
                            }
                            Value::Num(n) => {
                                let data = n.atoms().any(|a| matches!(a, Atom::Opaque { data: true, .. }));
                                Value::Num(Poly::opaque(name, dep, data))
                            }
                        }
                    }
                    (_, _, new) => new,
                };
                scope.vars.insert(name.to_string(), new);
            }
            None => self.scopes[0].vars.insert(name.to_string(), value).map(|_| ()).unwrap_or(()),
        }
    }

    // ---------------------------------------------------------------- declarations

    /// File-scope constants, `__shared__` and `__device__` arrays.
    fn file_scope(&mut self, root: Node<'a>) {
        let mut cursor = root.walk();
        let decls: Vec<Node> = root.named_children(&mut cursor).filter(|n| n.kind() == "declaration").collect();
        for d in decls {
            let head = self.text(d);
            let is_const = head.starts_with("const")
                || head.starts_with("constexpr")
                || head.starts_with("static const")
                || head.starts_with("static constexpr");
            if head.contains("__shared__") || head.contains("__device__") || is_const {
                self.dry += 1;
                self.declaration(d, 0, true);
                self.dry -= 1;
            }
        }
    }

    fn declaration(&mut self, d: Node<'a>, depth: usize, file_scope: bool) {
        let Some(ty) = d.child_by_field_name("type") else {
            return;
        };
        let type_text = self.text(ty);
        let head = &self.src[d.start_byte()..ty.start_byte()];
        let shared = head.contains("__shared__") || self.text(d).starts_with("__shared__");
        let device_array = head.contains("__device__") && !head.contains("__shared__");
        let constant = head.contains("__constant__");
        let mut cursor = d.walk();
        let declarators: Vec<Node> = d.children_by_field_name("declarator", &mut cursor).collect();
        for decl in declarators {
            let (target, value) = if decl.kind() == "init_declarator" {
                (decl.child_by_field_name("declarator"), decl.child_by_field_name("value"))
            } else {
                (Some(decl), None)
            };
            let Some(target) = target else { continue };
            if target.kind() == "array_declarator" {
                self.array(target, type_text, shared, device_array, constant, file_scope, depth);
                if let Some(v) = value {
                    self.expr(v, depth + 1);
                }
                continue;
            }
            let (Some(name_node), pointer) = declared_name(target) else {
                continue;
            };
            let name = self.text(name_node).to_string();
            let value = match value {
                Some(v) if matches!(v.kind(), "argument_list" | "initializer_list") => {
                    let dep = self.children_dep(v, depth + 1);
                    Value::Num(Poly::opaque(&name, dep, false))
                }
                Some(v) => self.expr(v, depth + 1),
                None => Value::Num(Poly::opaque(&name, Dep::Uniform, false)),
            };
            let value = match value {
                Value::Ptr(p) if pointer || is_pointer_declarator(target) => {
                    Value::Ptr(retype(p, &ElemType::new(type_text)))
                }
                other => other,
            };
            self.bind(&name, value);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        target: Node<'a>,
        type_text: &str,
        shared: bool,
        device: bool,
        constant: bool,
        file_scope: bool,
        depth: usize,
    ) {
        let mut dims = Vec::new();
        let mut node = target;
        while node.kind() == "array_declarator" {
            dims.push(node.child_by_field_name("size").and_then(|s| match self.expr(s, depth + 1) {
                Value::Num(p) => p.as_constant(),
                _ => None,
            }));
            match node.child_by_field_name("declarator") {
                Some(inner) => node = inner,
                None => break,
            }
        }
        // Declarators nest outermost-last: `t[A][B]` is (t[A])[B].
        dims.reverse();
        let (Some(name_node), _) = declared_name(node) else {
            return;
        };
        let name = self.text(name_node).to_string();
        let elem = ElemType::new(type_text);
        if constant {
            return;
        }
        let space = if shared {
            self.model.shared.push(SharedArray {
                name: name.clone(),
                elem: elem.clone(),
                dims: dims.clone(),
                span: span_of(target),
                file_scope,
            });
            Space::Shared
        } else if device || file_scope {
            Space::Global
        } else {
            self.model.local_arrays.push(LocalArray {
                name: name.clone(),
                elem: elem.clone(),
                dims: dims.clone(),
                span: span_of(target),
            });
            Space::Local
        };
        let inner = dims
            .iter()
            .skip(1)
            .map(|d| d.map(Poly::constant).unwrap_or_else(|| Poly::opaque("dim", Dep::Uniform, false)))
            .collect();
        self.bind(&name, Value::Ptr(Pointer { base: name.clone(), space, offset: Poly::zero(), elem, inner }));
    }

    // ---------------------------------------------------------------- statements

    fn stmt(&mut self, n: Node<'a>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match n.kind() {
            "compound_statement" => {
                self.scopes.push(Scope::new(HashMap::new(), self.loop_stack.len()));
                let guards = self.branch_stack.len();
                let mut cursor = n.walk();
                let children: Vec<Node> = n.named_children(&mut cursor).collect();
                for child in children {
                    self.stmt(child, depth + 1);
                }
                self.branch_stack.truncate(guards);
                self.scopes.pop();
            }
            "declaration" => {
                self.statement += 1;
                self.declaration(n, depth, false);
            }
            "expression_statement" => {
                self.statement += 1;
                if let Some(e) = n.named_child(0) {
                    self.expr(e, depth + 1);
                }
            }
            "return_statement" => {
                self.statement += 1;
                if let Some(e) = n.named_child(0) {
                    self.expr(e, depth + 1);
                }
            }
            "if_statement" => self.if_stmt(n, depth),
            "for_statement" => self.for_stmt(n, depth),
            "while_statement" | "do_statement" => self.while_stmt(n, depth),
            "for_range_loop" => {
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, depth + 1);
                }
            }
            "switch_statement" => {
                self.statement += 1;
                let cond = n.child_by_field_name("condition").map(|c| c.named_child(0).unwrap_or(c));
                let pushed = cond.map(|c| self.branch(c, BranchSource::Switch, depth));
                if let Some(b) = n.child_by_field_name("body") {
                    self.stmt(b, depth + 1);
                }
                if pushed.is_some() {
                    self.branch_stack.pop();
                }
            }
            "break_statement"
            | "continue_statement"
            | "goto_statement"
            | "comment"
            | "preproc_call"
            | "preproc_def"
            | "preproc_function_def" => {}
            kind if kind.ends_with("_statement")
                || kind.starts_with("preproc_")
                || kind == "labeled_statement"
                || kind == "else_clause" =>
            {
                let mut cursor = n.walk();
                let children: Vec<Node> = n.named_children(&mut cursor).collect();
                for child in children {
                    if child.kind().ends_with("statement")
                        || child.kind() == "declaration"
                        || child.kind().starts_with("preproc_")
                    {
                        self.stmt(child, depth + 1);
                    }
                }
            }
            _ => {
                self.expr(n, depth + 1);
            }
        }
    }

    /// Whether a branch body only leaves (`return;`, `continue;`, `break;`).
    fn exits(n: Node) -> bool {
        match n.kind() {
            "return_statement" | "continue_statement" | "break_statement" => true,
            "compound_statement" => {
                let mut cursor = n.walk();
                let children: Vec<Node> = n.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
                children.last().is_some_and(|last| Self::exits(*last)) && children.len() <= 2
            }
            _ => false,
        }
    }

    fn if_stmt(&mut self, n: Node<'a>, depth: usize) {
        self.statement += 1;
        let Some(cond) = n.child_by_field_name("condition") else {
            return;
        };
        let cond =
            if cond.kind() == "condition_clause" { cond.child_by_field_name("value").unwrap_or(cond) } else { cond };
        let consequence = n.child_by_field_name("consequence");
        let alternative = n.child_by_field_name("alternative");
        let early = alternative.is_none() && consequence.is_some_and(Self::exits);
        let b = self.branch(cond, if early { BranchSource::EarlyExit } else { BranchSource::If }, depth);
        if let Some(c) = consequence {
            self.stmt(c, depth + 1);
        }
        if let Some(a) = alternative {
            self.stmt(a, depth + 1);
        }
        // An early exit guards the rest of the enclosing block: keep it on the stack.
        if !early {
            self.branch_stack.pop();
        } else if let Some(last) = self.branch_stack.last().copied() {
            debug_assert_eq!(last, b);
        }
    }

    /// Records a branch on `cond`, pushes it, returns its index.
    fn branch(&mut self, cond: Node<'a>, source: BranchSource, depth: usize) -> usize {
        let kind = self.classify(cond, depth);
        let b = self.model.branches.len();
        self.model.branches.push(Branch {
            span: self.span(cond),
            condition: self.site.as_ref().map(|s| s.1.clone()).unwrap_or_else(|| self.text(cond).to_string()),
            kind,
            source,
        });
        self.branch_stack.push(b);
        b
    }

    /// How the condition varies across threads; evaluates it once for its accesses.
    fn classify(&mut self, cond: Node<'a>, depth: usize) -> BranchKind {
        let saved = self.lane_modulo.take();
        self.dry += 1;
        let shape = self.shape(cond, depth);
        self.dry -= 1;
        let value = self.num(cond, depth + 1);
        let modulo = self.lane_modulo.take();
        self.lane_modulo = saved;
        if let Some(modulus) = modulo {
            return BranchKind::LaneModulo { modulus };
        }
        match value.dep() {
            Dep::Uniform => BranchKind::Uniform,
            Dep::Warp => BranchKind::WarpUniform,
            Dep::Thread if value.data_dependent() && shape != BranchKind::Bound => BranchKind::DataDependent,
            Dep::Thread => shape,
        }
    }

    /// The comparison structure of a thread-dependent condition.
    fn shape(&mut self, cond: Node<'a>, depth: usize) -> BranchKind {
        let rank = |k: &BranchKind| match k {
            BranchKind::Uniform => 0,
            BranchKind::WarpUniform => 1,
            BranchKind::Bound => 2,
            BranchKind::SingleThread => 3,
            BranchKind::DataDependent => 4,
            _ => 5,
        };
        let mut node = cond;
        while matches!(node.kind(), "parenthesized_expression") {
            match node.named_child(0) {
                Some(c) => node = c,
                None => break,
            }
        }
        if node.kind() == "unary_expression"
            && op_text(self.src, node) == "!"
            && let Some(arg) = node.child_by_field_name("argument")
        {
            return self.shape(arg, depth + 1);
        }
        if node.kind() != "binary_expression" || depth > MAX_DEPTH {
            return BranchKind::Thread;
        }
        let (Some(l), Some(r)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
            return BranchKind::Thread;
        };
        let op = op_text(self.src, node);
        if matches!(op, "&&" | "||") {
            let (a, b) = (self.shape(l, depth + 1), self.shape(r, depth + 1));
            return if rank(&a) >= rank(&b) { a } else { b };
        }
        let (lv, rv) = (self.num(l, depth + 1), self.num(r, depth + 1));
        let (ld, rd) = (lv.dep(), rv.dep());
        if ld == Dep::Uniform && rd == Dep::Uniform {
            return BranchKind::Uniform;
        }
        if ld != Dep::Thread && rd != Dep::Thread {
            return BranchKind::WarpUniform;
        }
        if lv.data_dependent() || rv.data_dependent() {
            return BranchKind::DataDependent;
        }
        let one_side = (ld == Dep::Thread) != (rd == Dep::Thread);
        match op {
            "<" | "<=" | ">" | ">=" if one_side => BranchKind::Bound,
            "==" | "!=" if one_side => BranchKind::SingleThread,
            _ => BranchKind::Thread,
        }
    }

    fn for_stmt(&mut self, n: Node<'a>, depth: usize) {
        self.statement += 1;
        self.scopes.push(Scope::new(HashMap::new(), self.loop_stack.len()));
        let mut var = None;
        let mut init = None;
        if let Some(i) = n.child_by_field_name("initializer") {
            match i.kind() {
                "declaration" => {
                    // The counter's first value is not a value of its own: its loop gives it.
                    let shown = self.model.thread_values.len();
                    self.declaration(i, depth, false);
                    self.model.thread_values.truncate(shown);
                    let mut cursor = i.walk();
                    if let Some(d) = i.children_by_field_name("declarator", &mut cursor).next()
                        && let (Some(name), _) = declared_name(d)
                    {
                        let name = self.text(name).to_string();
                        init = self.lookup(&name).map(|(_, v)| v.clone());
                        if let Some(start) = d.child_by_field_name("value").and_then(|v| self.clamped(v, depth)) {
                            init = Some(Value::Num(start));
                        }
                        var = Some(name);
                    }
                }
                _ => {
                    self.expr(i, depth + 1);
                    if i.kind() == "assignment_expression"
                        && let Some(l) = i.child_by_field_name("left")
                        && l.kind() == "identifier"
                    {
                        let name = self.text(l).to_string();
                        init = self.lookup(&name).map(|(_, v)| v.clone());
                        var = Some(name);
                    }
                }
            }
        }
        let update = n.child_by_field_name("update");
        let (step_var, step) = update.map(|u| self.step_of(u, depth)).unwrap_or((None, Step::Unknown));
        if var.is_none() {
            var = step_var.clone();
            init = var.as_ref().and_then(|v| self.lookup(v).map(|(_, x)| x.clone()));
        }
        let var = var.filter(|v| step_var.as_deref().is_none_or(|s| s == v));
        let span = self.header_span(n);
        self.enter_loop(
            n,
            LoopKind::For,
            span,
            var,
            init,
            step,
            n.child_by_field_name("condition"),
            n.child_by_field_name("body"),
            depth,
        );
        self.scopes.pop();
    }

    fn while_stmt(&mut self, n: Node<'a>, depth: usize) {
        self.statement += 1;
        let kind = if n.kind() == "do_statement" { LoopKind::Do } else { LoopKind::While };
        let cond = n.child_by_field_name("condition").map(|c| {
            if matches!(c.kind(), "condition_clause" | "parenthesized_expression") {
                c.named_child(0).unwrap_or(c)
            } else {
                c
            }
        });
        let body = n.child_by_field_name("body");
        // The counter: a variable of the condition the body steps additively.
        let mut var = None;
        let mut step = Step::Unknown;
        if let (Some(c), Some(b)) = (cond, body) {
            let names: Vec<String> = descendants(c)
                .into_iter()
                .filter(|d| d.kind() == "identifier")
                .map(|d| self.text(d).to_string())
                .collect();
            for name in names {
                if let Some(s) = self.induction_step(b, &name, depth) {
                    var = Some(name);
                    step = s;
                    break;
                }
            }
        }
        let init = var.as_ref().and_then(|v| self.lookup(v).map(|(_, x)| x.clone()));
        self.scopes.push(Scope::new(HashMap::new(), self.loop_stack.len()));
        let span = self.header_span(n);
        self.enter_loop(n, kind, span, var, init, step, cond, body, depth);
        self.scopes.pop();
    }

    /// The loop's first line (`for (…) {`), or the whole loop when on one line.
    fn header_span(&self, n: Node) -> Span {
        let mut s = self.span(n);
        if self.site.is_none() {
            let line = self.src.lines().nth(s.start.line as usize).unwrap_or("");
            if s.end.line != s.start.line {
                s.end = kernelpro_model::Pos::new(s.start.line, line.trim_end().len() as u32);
            }
        }
        s
    }

    /// `i++` → (i, Add 1); `i += e` → (i, Add e); `i >>= 1` → (i, Scale).
    fn step_of(&mut self, u: Node<'a>, depth: usize) -> (Option<String>, Step) {
        let ident = |w: &Self, n: Option<Node>| n.filter(|n| n.kind() == "identifier").map(|n| w.text(n).to_string());
        match u.kind() {
            "update_expression" => {
                let name = ident(self, u.child_by_field_name("argument"));
                let t = self.text(u);
                (name, Step::Add(Poly::constant(if t.contains("--") { -1 } else { 1 })))
            }
            "assignment_expression" => {
                let name = ident(self, u.child_by_field_name("left"));
                let Some(r) = u.child_by_field_name("right") else {
                    return (name, Step::Unknown);
                };
                let op = op_text(self.src, u);
                self.dry += 1;
                let rv = self.num(r, depth + 1);
                self.dry -= 1;
                let step = match op {
                    "+=" => Step::Add(rv),
                    "-=" => Step::Add(rv.neg()),
                    "*=" | "/=" | "<<=" | ">>=" => Step::Scale(format!("{op} {}", self.text(r))),
                    "=" => {
                        // `i = i + e`
                        let rest =
                            name.as_ref().map(|n| rv.sub(&self.lookup(n).map(|(_, v)| as_poly(v)).unwrap_or_default()));
                        match rest {
                            Some(s)
                                if s.dep() == Dep::Uniform
                                    && r.kind() == "binary_expression"
                                    && op_text(self.src, r) == "+" =>
                            {
                                Step::Add(s)
                            }
                            _ => Step::Unknown,
                        }
                    }
                    _ => Step::Unknown,
                };
                (name, step)
            }
            "comma_expression" => match u.named_child(0) {
                Some(first) => self.step_of(first, depth + 1),
                None => (None, Step::Unknown),
            },
            _ => (None, Step::Unknown),
        }
    }

    /// The uniform additive step of `name` when every update of it in `body` is one.
    fn induction_step(&mut self, body: Node<'a>, name: &str, depth: usize) -> Option<Step> {
        let mut step = None;
        for d in descendants(body) {
            let target = match d.kind() {
                "update_expression" => d.child_by_field_name("argument"),
                "assignment_expression" => d.child_by_field_name("left"),
                "declaration" => {
                    let mut cursor = d.walk();
                    let shadows = d
                        .children_by_field_name("declarator", &mut cursor)
                        .any(|x| declared_name(x).0.is_some_and(|n| self.text(n) == name));
                    if shadows {
                        return None;
                    }
                    continue;
                }
                _ => continue,
            };
            if target.is_none_or(|t| t.kind() != "identifier" || self.text(t) != name) {
                continue;
            }
            let (_, s) = self.step_of(d, depth);
            match s {
                Step::Add(p) if p.dep() == Dep::Uniform && step.is_none() => step = Some(Step::Add(p)),
                _ => return None,
            }
        }
        step
    }

    #[allow(clippy::too_many_arguments)]
    fn enter_loop(
        &mut self,
        n: Node<'a>,
        kind: LoopKind,
        span: Span,
        var: Option<String>,
        init: Option<Value>,
        step: Step,
        cond: Option<Node<'a>>,
        body: Option<Node<'a>>,
        depth: usize,
    ) {
        let init_poly = init.as_ref().map(as_poly);
        let mut atom = None;
        if let Some(v) = &var {
            let value = match (&step, &init_poly) {
                (Step::Add(s), Some(i)) if s.dep() == Dep::Uniform => {
                    if i.is_zero() && s.as_constant() == Some(1) {
                        let a = Atom::Loop(v.clone());
                        atom = Some(a.clone());
                        Poly::atom(a)
                    } else {
                        let a = Atom::Loop(format!("#{v}"));
                        atom = Some(a.clone());
                        i.add(&s.mul(&Poly::atom(a)))
                    }
                }
                _ => Poly::opaque(v, init_poly.as_ref().map(|p| p.dep()).unwrap_or(Dep::Uniform), false),
            };
            let value = match (&init, &step, &atom) {
                (Some(Value::Ptr(p)), Step::Add(s), Some(a)) => {
                    Value::Ptr(Pointer { offset: p.offset.add(&s.mul(&Poly::atom(a.clone()))), ..p.clone() })
                }
                (Some(Value::Ptr(p)), _, _) => {
                    Value::Ptr(Pointer { offset: Poly::opaque(v, p.offset.dep(), false), ..p.clone() })
                }
                _ => Value::Num(value),
            };
            self.set_existing_or_bind(v, value);
            if let Some(scope) = self.scopes.last_mut() {
                scope.inductions.push(v.clone());
            }
        }
        // Other variables the body steps by a uniform amount are inductions too (`idx += stride`).
        if let Some(b) = body {
            self.other_inductions(b, var.as_deref(), depth);
        }
        let bound = cond.and_then(|c| self.bound_of(c, var.as_deref(), depth));
        let branch = match cond {
            Some(c) => self.branch(c, BranchSource::Loop, depth),
            None => {
                let b = self.model.branches.len();
                self.model.branches.push(Branch {
                    span,
                    condition: String::new(),
                    kind: BranchKind::Uniform,
                    source: BranchSource::Loop,
                });
                self.branch_stack.push(b);
                b
            }
        };
        let lane_init = init_poly.as_ref().is_some_and(lane_varying);
        let step_poly = if let Step::Add(s) = &step { Some(s.clone()) } else { None };
        let has = |p: &Option<Poly>, f: fn(&Atom) -> bool| p.as_ref().is_some_and(|p| p.atoms().any(f));
        let grid_stride = lane_init && has(&step_poly, |a| matches!(a, Atom::Gdim(_)));
        let block_stride = lane_init && !grid_stride && has(&step_poly, |a| matches!(a, Atom::Bdim(_)));
        let id = self.model.loops.len();
        self.model.loops.push(Loop {
            kind,
            span,
            var,
            init: init_poly,
            condition: cond.map(|c| self.text(c).to_string()).unwrap_or_default(),
            bound,
            step,
            atom,
            grid_stride,
            block_stride,
            parent: self.loop_stack.last().copied(),
            branch,
        });
        let _ = n;
        self.loop_stack.push(id);
        if let Some(b) = body {
            self.stmt(b, depth + 1);
        }
        self.loop_stack.pop();
        self.branch_stack
            .truncate(self.branch_stack.iter().position(|&x| x == branch).unwrap_or(self.branch_stack.len()));
    }

    fn set_existing_or_bind(&mut self, name: &str, value: Value) {
        match self.scopes.iter_mut().rev().find(|s| s.vars.contains_key(name)) {
            Some(scope) => {
                scope.vars.insert(name.to_string(), value);
            }
            None => self.bind(name, value),
        }
    }

    fn other_inductions(&mut self, body: Node<'a>, counter: Option<&str>, depth: usize) {
        let mut names: Vec<String> = Vec::new();
        for d in descendants(body) {
            let target = match d.kind() {
                "update_expression" => d.child_by_field_name("argument"),
                "assignment_expression" if op_text(self.src, d) != "=" => d.child_by_field_name("left"),
                _ => None,
            };
            if let Some(t) = target.filter(|t| t.kind() == "identifier") {
                let name = self.text(t).to_string();
                if Some(name.as_str()) != counter
                    && !names.contains(&name)
                    && self.lookup(&name).is_some_and(|(_, v)| as_poly(v).is_affine())
                {
                    names.push(name);
                }
            }
        }
        for name in names {
            if let Some(Step::Add(s)) = self.induction_step(body, &name, depth)
                && let Some((_, old)) = self.lookup(&name)
            {
                let trip = Poly::atom(Atom::Loop(format!("#{name}")));
                let value = match old.clone() {
                    Value::Num(p) => Value::Num(p.add(&s.mul(&trip))),
                    Value::Ptr(mut p) => {
                        p.offset = p.offset.add(&s.mul(&trip));
                        Value::Ptr(p)
                    }
                };
                self.set_existing_or_bind(&name, value);
                if let Some(scope) = self.scopes.last_mut() {
                    scope.inductions.push(name);
                }
            }
        }
    }

    /// `E` of `var < E` (or `E > var`, `<=`, `!=`).
    fn bound_of(&mut self, cond: Node<'a>, var: Option<&str>, depth: usize) -> Option<Poly> {
        let var = var?;
        let mut node = cond;
        while node.kind() == "parenthesized_expression" {
            node = node.named_child(0)?;
        }
        if node.kind() != "binary_expression" {
            return None;
        }
        let (l, r) = (node.child_by_field_name("left")?, node.child_by_field_name("right")?);
        let is_var = |n: Node| n.kind() == "identifier" && &self.src[n.byte_range()] == var;
        let other = match op_text(self.src, node) {
            "<" | "<=" | "!=" | ">" | ">=" if is_var(l) => r,
            "<" | "<=" | "!=" | ">" | ">=" if is_var(r) => l,
            "&&" => return self.bound_of(l, Some(var), depth + 1),
            _ => return None,
        };
        if let Some(b) = self.clamped(other, depth) {
            return Some(b);
        }
        self.dry += 1;
        let b = self.num(other, depth + 1);
        self.dry -= 1;
        Some(b)
    }

    /// A window's edge clamped to the array (`max(0, row - r)`, `min(row + r + 1, h)`): the
    /// thread-varying side, the value every interior thread gets, so the window's counter
    /// moves with the thread as it does away from the edges.
    fn clamped(&mut self, n: Node<'a>, depth: usize) -> Option<Poly> {
        let mut n = n;
        while n.kind() == "parenthesized_expression" {
            n = n.named_child(0)?;
        }
        let name = self.text(n.child_by_field_name("function").filter(|_| n.kind() == "call_expression")?);
        if !matches!(name.trim_start_matches("std::").trim_start_matches("::"), "max" | "min") {
            return None;
        }
        let args = n.child_by_field_name("arguments")?;
        let mut cursor = args.walk();
        let args: Vec<Node> = args.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
        let [a, b] = args[..] else { return None };
        self.dry += 1;
        let (a, b) = (self.num(a, depth + 1), self.num(b, depth + 1));
        self.dry -= 1;
        match (a.dep() == Dep::Uniform, b.dep() == Dep::Uniform) {
            (true, false) if b.is_affine() => Some(b),
            (false, true) if a.is_affine() => Some(a),
            _ => None,
        }
    }

    // ---------------------------------------------------------------- expressions

    fn num(&mut self, n: Node<'a>, depth: usize) -> Poly {
        let v = self.expr(n, depth);
        as_poly(&v)
    }

    fn children_dep(&mut self, n: Node<'a>, depth: usize) -> Dep {
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        children.into_iter().map(|c| self.expr(c, depth + 1).dep()).max().unwrap_or(Dep::Uniform)
    }

    fn opaque_of(&self, n: Node, parts: &[&Poly]) -> Value {
        let dep = parts.iter().map(|p| p.dep()).max().unwrap_or(Dep::Uniform);
        let data = parts.iter().any(|p| p.atoms().any(|a| matches!(a, Atom::Opaque { data: true, .. })));
        Value::Num(Poly::opaque(self.text(n), dep, data))
    }

    fn expr(&mut self, n: Node<'a>, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Num(Poly::opaque("…", Dep::Uniform, false));
        }
        match n.kind() {
            "number_literal" => match parse_int(self.text(n)) {
                Some(v) => Value::Num(Poly::constant(v)),
                None => Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false)),
            },
            "true" => Value::Num(Poly::constant(1)),
            "false" | "null" | "nullptr" => Value::Num(Poly::constant(0)),
            "identifier" => self.identifier(n, depth),
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) => self.expr(c, depth + 1),
                None => Value::Num(Poly::zero()),
            },
            "field_expression" => self.field(n, depth),
            "binary_expression" => self.binary(n, depth),
            "unary_expression" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Value::Num(Poly::zero());
                };
                let v = self.num(arg, depth + 1);
                match op_text(self.src, n) {
                    "-" => Value::Num(v.neg()),
                    "+" => Value::Num(v),
                    _ => self.opaque_of(n, &[&v]),
                }
            }
            "cast_expression" => {
                let ty = n.child_by_field_name("type").map(|t| self.text(t)).unwrap_or("");
                let v = match n.child_by_field_name("value") {
                    Some(v) => self.expr(v, depth + 1),
                    None => return Value::Num(Poly::zero()),
                };
                cast(v, ty)
            }
            "subscript_expression" | "pointer_expression"
                if !(n.kind() == "pointer_expression" && op_text(self.src, n) == "&") =>
            {
                match self.place(n, depth) {
                    Place::Elem(p) => {
                        self.record(n, &p, AccessKind::Read);
                        Value::Num(Poly::opaque(&self.access_text(n), p.offset.dep(), true))
                    }
                    Place::Row(p) => Value::Ptr(p),
                    Place::Var(name) => self.lookup(&name).map(|(_, v)| v.clone()).unwrap_or(Value::Num(Poly::opaque(
                        &name,
                        Dep::Uniform,
                        false,
                    ))),
                    Place::Unknown => Value::Num(Poly::opaque(self.text(n), Dep::Thread, true)),
                }
            }
            "pointer_expression" => {
                // `&x[i]`: the address, no access.
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Value::Num(Poly::zero());
                };
                match self.place(arg, depth) {
                    Place::Elem(p) | Place::Row(p) => Value::Ptr(p),
                    Place::Var(name) => Value::Num(Poly::opaque(&format!("&{name}"), Dep::Uniform, false)),
                    Place::Unknown => Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false)),
                }
            }
            "conditional_expression" => {
                let Some(cond) = n.child_by_field_name("condition") else {
                    return Value::Num(Poly::zero());
                };
                let b = self.branch(cond, BranchSource::Ternary, depth);
                let c = n.child_by_field_name("consequence").map(|c| self.expr(c, depth + 1));
                let a = n.child_by_field_name("alternative").map(|a| self.expr(a, depth + 1));
                if self.branch_stack.last() == Some(&b) {
                    self.branch_stack.pop();
                }
                match (c, a) {
                    (Some(c), Some(a)) if c == a => c,
                    (Some(Value::Ptr(p)), Some(Value::Ptr(q))) if p.base == q.base && p.elem == q.elem => {
                        let dep = p.offset.dep().max(q.offset.dep()).max(self.model.branches[b].kind.dep());
                        Value::Ptr(Pointer { offset: Poly::opaque(self.text(n), dep, false), ..p })
                    }
                    (c, a) => {
                        let cp = c.as_ref().map(as_poly).unwrap_or_default();
                        let ap = a.as_ref().map(as_poly).unwrap_or_default();
                        let bd = Poly::opaque("cond", self.model.branches[b].kind.dep(), false);
                        self.opaque_of(n, &[&cp, &ap, &bd])
                    }
                }
            }
            "assignment_expression" => self.assignment(n, depth),
            "update_expression" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Value::Num(Poly::zero());
                };
                let delta = if self.text(n).contains("--") { -1 } else { 1 };
                match self.place(arg, depth) {
                    Place::Var(name) => {
                        let old = self.lookup(&name).map(|(_, v)| v.clone()).unwrap_or(Value::Num(Poly::zero()));
                        let new = add(old.clone(), Poly::constant(delta));
                        self.assign(&name, new);
                        old
                    }
                    Place::Elem(p) => {
                        self.record(arg, &p, AccessKind::ReadWrite);
                        Value::Num(Poly::opaque(self.text(arg), p.offset.dep(), true))
                    }
                    _ => Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false)),
                }
            }
            "comma_expression" => {
                let mut last = Value::Num(Poly::zero());
                let mut cursor = n.walk();
                let children: Vec<Node> = n.named_children(&mut cursor).collect();
                for c in children {
                    last = self.expr(c, depth + 1);
                }
                last
            }
            "call_expression" => self.call(n, depth),
            "sizeof_expression" => {
                let t = self.text(n);
                let inner = t.trim_start_matches("sizeof").trim().trim_start_matches('(').trim_end_matches(')');
                match size_of(&super::types::base_type(inner)) {
                    Some(s) if !inner.contains('*') => Value::Num(Poly::constant(s as i64)),
                    _ => Value::Num(Poly::opaque(t, Dep::Uniform, false)),
                }
            }
            "char_literal" | "string_literal" | "concatenated_string" | "lambda_expression" => {
                Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false))
            }
            _ => {
                let dep = self.children_dep(n, depth);
                Value::Num(Poly::opaque(self.text(n), dep, false))
            }
        }
    }

    fn identifier(&mut self, n: Node<'a>, depth: usize) -> Value {
        let name = self.text(n);
        if let Some(v) = self.with_arg(name, |w, arg| w.expr(arg, depth + 1)) {
            return v;
        }
        if let Some((_, v)) = self.lookup(name) {
            return v.clone();
        }
        if name == "warpSize" {
            return Value::Num(Poly::constant(32));
        }
        if let Some(m) = self.macros.get(name).filter(|m| m.params.is_none())
            && let Some(body) = m.expr()
        {
            return self.in_macro(n, &m.text, |w| w.expr(body, depth + 4));
        }
        Value::Num(Poly::atom(Atom::Sym(name.to_string())))
    }

    /// A macro parameter's use: `f` on the argument expression, in the
    /// caller's text and scopes (a parameter named like a caller's variable
    /// is no capture); `None` when `name` is no parameter of an enclosing expansion.
    fn with_arg<T>(&mut self, name: &str, f: impl FnOnce(&mut Self, Node<'a>) -> T) -> Option<T> {
        let (i, arg) = self.scopes.iter().enumerate().rev().find_map(|(i, s)| {
            if s.vars.contains_key(name) {
                return Some(None);
            }
            s.args.get(name).map(|a| Some((i, a.clone())))
        })??;
        let inner = self.scopes.split_off(i);
        let saved_src = std::mem::replace(&mut self.src, arg.src);
        let saved_site = std::mem::replace(&mut self.site, arg.site);
        let again = arg.recorded as usize;
        let records = self.dry == 0;
        self.dry += again;
        let out = f(self, arg.node);
        self.dry -= again;
        self.site = saved_site;
        self.src = saved_src;
        self.scopes.truncate(i);
        self.scopes.extend(inner);
        if records && let Some(a) = self.scopes[i].args.get_mut(name) {
            a.recorded = true;
        }
        Some(out)
    }

    /// Runs `f` on a macro body's nodes, with accesses placed on the use site `n`.
    fn in_macro<T>(&mut self, n: Node<'a>, macro_text: &'a str, f: impl FnOnce(&mut Self) -> T) -> T {
        let site = self.site.clone().unwrap_or_else(|| (span_of(n), self.text(n).to_string()));
        let saved_src = std::mem::replace(&mut self.src, macro_text);
        let saved_site = self.site.replace(site);
        let out = f(self);
        self.src = saved_src;
        self.site = saved_site;
        out
    }

    fn field(&mut self, n: Node<'a>, depth: usize) -> Value {
        let (Some(arg), Some(field)) = (n.child_by_field_name("argument"), n.child_by_field_name("field")) else {
            return Value::Num(Poly::zero());
        };
        let f = self.text(field);
        if let Some(dim) = Dim::from_field(f) {
            let atom = match self.text(arg) {
                "threadIdx" => Some(Atom::Tid(dim)),
                "blockIdx" => Some(Atom::Bid(dim)),
                "blockDim" => Some(Atom::Bdim(dim)),
                "gridDim" => Some(Atom::Gdim(dim)),
                _ => None,
            };
            if let Some(a) = atom {
                // A block dimension of 1 makes its thread index 0.
                if let (Atom::Tid(d), Some(b)) = (&a, self.block)
                    && b[*d as usize] == 1
                {
                    return Value::Num(Poly::zero());
                }
                return Value::Num(Poly::atom(a));
            }
        }
        let v = self.expr(arg, depth + 1);
        let p = as_poly(&v);
        Value::Num(Poly::opaque(self.text(n), p.dep(), true))
    }

    fn binary(&mut self, n: Node<'a>, depth: usize) -> Value {
        let (Some(l), Some(r)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) else {
            return Value::Num(Poly::zero());
        };
        let op = op_text(self.src, n);
        if op == "*" {
            self.product_depth += 1;
        }
        let lv = self.expr(l, depth + 1);
        let rv = self.expr(r, depth + 1);
        if op == "*" {
            self.product_depth -= 1;
        }
        match op {
            "+" => match (lv, rv) {
                (Value::Ptr(p), Value::Num(k)) | (Value::Num(k), Value::Ptr(p)) => {
                    Value::Ptr(Pointer { offset: p.offset.add(&k), ..p })
                }
                (a, b) => Value::Num(as_poly(&a).add(&as_poly(&b))),
            },
            "-" => match (lv, rv) {
                (Value::Ptr(p), Value::Num(k)) => Value::Ptr(Pointer { offset: p.offset.sub(&k), ..p }),
                (a, b) => Value::Num(as_poly(&a).sub(&as_poly(&b))),
            },
            "*" => Value::Num(as_poly(&lv).mul(&as_poly(&rv))),
            "/" | ">>" => {
                let (a, b) = (as_poly(&lv), as_poly(&rv));
                let k = b
                    .as_constant()
                    .and_then(|k| if op == ">>" { (0..62).contains(&k).then(|| 1i64 << k) } else { Some(k) });
                match k.filter(|k| *k > 0) {
                    Some(k) if k % 32 != 0 && k > 32 && lane_contiguous(&a) => Value::Num(self.quotient(l, r)),
                    Some(k) => self.divide(n, &a, k),
                    None if op == "/" && b.dep() == Dep::Uniform && lane_contiguous(&a) => {
                        Value::Num(self.quotient(l, r))
                    }
                    None => self.opaque_of(n, &[&a, &b]),
                }
            }
            "<<" => {
                let (a, b) = (as_poly(&lv), as_poly(&rv));
                match b.as_constant().filter(|k| (0..62).contains(k)) {
                    Some(k) => Value::Num(a.scale(1i64 << k)),
                    None => self.opaque_of(n, &[&a, &b]),
                }
            }
            "%" => {
                let (a, b) = (as_poly(&lv), as_poly(&rv));
                let v = self.modulo(n, &a, &b, self.text(r));
                // `idx % C` of a lane-contiguous index: `idx - C * (idx / C)`.
                let wide = b.as_constant().is_none_or(|k| k > 32 && k % 32 != 0);
                if b.dep() == Dep::Uniform && wide && lane_contiguous(&a) {
                    return Value::Num(a.sub(&b.mul(&self.quotient(l, r))));
                }
                v
            }
            "&" => {
                let (a, b) = (as_poly(&lv), as_poly(&rv));
                // `x & (2^k - 1)` is `x % 2^k`.
                let mask = |p: &Poly| p.as_constant().filter(|m| *m > 0 && (m + 1) & m == 0);
                match (mask(&b), mask(&a)) {
                    (Some(m), _) => self.modulo(n, &a, &Poly::constant(m + 1), &(m + 1).to_string()),
                    (None, Some(m)) => self.modulo(n, &b, &Poly::constant(m + 1), &(m + 1).to_string()),
                    _ => {
                        if lane_varying(&a) && b.dep() == Dep::Uniform && self.dry == 0 {
                            self.lane_modulo.get_or_insert_with(|| format!("& {}", self.src[r.byte_range()].trim()));
                        }
                        self.opaque_of(n, &[&a, &b])
                    }
                }
            }
            _ => {
                let (a, b) = (as_poly(&lv), as_poly(&rv));
                self.opaque_of(n, &[&a, &b])
            }
        }
    }

    /// `idx / C` of a lane-contiguous index by a uniform divisor (a row of
    /// `idx = row * C + col`): taken as uniform within a warp, which holds for
    /// every warp that does not straddle a multiple of `C` (all of them when
    /// `C` is a multiple of 32). `idx % C` uses the same atom, so the pair
    /// recombines to `idx` where the code recombines them.
    fn quotient(&self, l: Node, r: Node) -> Poly {
        let squash = |n: Node| self.text(n).split_whitespace().collect::<String>();
        Poly::opaque(&format!("{}/{}", squash(l), squash(r)), Dep::Warp, false)
    }

    /// `a / k` for a constant `k`: exact, a warp id, or opaque.
    fn divide(&mut self, n: Node, a: &Poly, k: i64) -> Value {
        if let Some(q) = a.div_exact(k) {
            return Value::Num(q);
        }
        match a.dep() {
            Dep::Uniform => Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false)),
            _ if k % 32 == 0 && self.tid_like(a) => {
                if k == 32
                    && a.without(|x| x.dep() != Dep::Uniform).is_zero()
                    && a.atoms().all(|x| matches!(x, Atom::Tid(_) | Atom::Bdim(_)))
                {
                    Value::Num(Poly::atom(Atom::Warp))
                } else {
                    Value::Num(Poly::opaque(self.text(n), Dep::Warp, false))
                }
            }
            Dep::Warp => Value::Num(Poly::opaque(self.text(n), Dep::Warp, false)),
            Dep::Thread => Value::Num(Poly::opaque(self.text(n), Dep::Thread, a.data_dependent())),
        }
    }

    /// `a % b`: the lane for a linear thread index mod 32, else opaque; notes a lane modulo pattern.
    fn modulo(&mut self, n: Node, a: &Poly, b: &Poly, modulus: &str) -> Value {
        let k = b.as_constant();
        if a.dep() == Dep::Uniform && b.dep() == Dep::Uniform {
            return Value::Num(Poly::opaque(self.text(n), Dep::Uniform, false));
        }
        if let Some(k) = k
            && k > 0
            && k % 32 == 0
            && self.tid_like(a)
        {
            let lane = Poly::atom(Atom::Lane);
            return Value::Num(if k == 32 {
                lane
            } else {
                lane.add(&Poly::opaque(self.text(n), Dep::Warp, false).scale(32))
            });
        }
        if lane_varying(a) && k.is_none_or(|k| k % 32 != 0) && self.dry == 0 && !a.data_dependent() {
            let m = modulus.trim().trim_start_matches('(').trim_end_matches(')').to_string();
            self.lane_modulo.get_or_insert(m);
        }
        let dep = a.dep().max(b.dep());
        Value::Num(Poly::opaque(self.text(n), dep, a.data_dependent()))
    }

    /// A linear thread index (plus uniform multiples of 32): its `/ 32` is
    /// uniform in a warp and its `% 32` is the lane.
    fn tid_like(&self, a: &Poly) -> bool {
        if a.coefficient(&Atom::Tid(Dim::X)).as_constant() != Some(1) {
            return false;
        }
        let bx_multiple = self.block.is_none_or(|b| b[0] % 32 == 0);
        a.terms.iter().filter(|(m, _)| m.as_slice() != [Atom::Tid(Dim::X)]).all(|(m, c)| {
            let has_bdim_x = m.contains(&Atom::Bdim(Dim::X));
            let varying = m.iter().any(|x| x.dep() != Dep::Uniform && !matches!(x, Atom::Tid(_)));
            !varying && (c % 32 == 0 || (has_bdim_x && bx_multiple))
        })
    }

    fn assignment(&mut self, n: Node<'a>, depth: usize) -> Value {
        let (Some(l), Some(r)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) else {
            return Value::Num(Poly::zero());
        };
        let op = op_text(self.src, n);
        // Into a variable, or an element of a per-thread array (`acc[i][j] += a * b`).
        let mut base = l;
        while base.kind() == "subscript_expression" {
            match base.child_by_field_name("argument") {
                Some(a) => base = a,
                None => break,
            }
        }
        let local_elem = l.kind() == "subscript_expression"
            && base.kind() == "identifier"
            && matches!(self.lookup(self.text(base)), Some((_, Value::Ptr(p))) if p.space == Space::Local);
        let accumulates = (local_elem && matches!(op, "+=" | "-="))
            || l.kind() == "identifier" && {
                let name = self.text(l);
                matches!(op, "+=" | "-=")
                    || (op == "="
                        && self.text(r).split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == name))
            };
        self.accumulating += accumulates as usize;
        let rv = self.expr(r, depth + 1);
        self.accumulating -= accumulates as usize;
        match self.place(l, depth) {
            Place::Var(name) => {
                let old = self.lookup(&name).map(|(_, v)| v.clone());
                let new = match (op, old) {
                    ("=", _) | (_, None) => rv,
                    ("+=", Some(o)) => add(o, as_poly(&rv)),
                    ("-=", Some(o)) => add(o, as_poly(&rv).neg()),
                    ("*=", Some(o)) => Value::Num(as_poly(&o).mul(&as_poly(&rv))),
                    ("<<=", Some(o)) => match as_poly(&rv).as_constant().filter(|k| (0..62).contains(k)) {
                        Some(k) => Value::Num(as_poly(&o).scale(1 << k)),
                        None => self.opaque_of(n, &[&as_poly(&o), &as_poly(&rv)]),
                    },
                    (_, Some(o)) => self.opaque_of(n, &[&as_poly(&o), &as_poly(&rv)]),
                };
                self.assign(&name, new.clone());
                new
            }
            Place::Elem(p) => {
                self.record(l, &p, if op == "=" { AccessKind::Write } else { AccessKind::ReadWrite });
                rv
            }
            _ => rv,
        }
    }

    /// What an lvalue designates; evaluates its index (recording reads inside it).
    fn place(&mut self, n: Node<'a>, depth: usize) -> Place {
        if depth > MAX_DEPTH {
            return Place::Unknown;
        }
        match n.kind() {
            "identifier" => {
                let name = self.text(n);
                if let Some(place) = self.with_arg(name, |w, arg| w.place(arg, depth + 1)) {
                    return place;
                }
                match self.lookup(name) {
                    Some(_) => Place::Var(name.to_string()),
                    None if self.macros.get(name).is_some() => Place::Unknown,
                    None => Place::Var(name.to_string()),
                }
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) => self.place(c, depth + 1),
                None => Place::Unknown,
            },
            "subscript_expression" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Place::Unknown;
                };
                let base = self.expr(arg, depth + 1);
                let index = n
                    .child_by_field_name("indices")
                    .and_then(|l| l.named_child(0))
                    .or_else(|| n.child_by_field_name("index"));
                let saved = std::mem::take(&mut self.product_depth);
                let idx = index.map(|i| self.num(i, depth + 1)).unwrap_or_default();
                self.product_depth = saved;
                match base {
                    Value::Ptr(mut p) => {
                        if p.inner.is_empty() {
                            p.offset = p.offset.add(&idx);
                            Place::Elem(p)
                        } else {
                            let row = p.inner.iter().fold(Poly::constant(1), |acc, d| acc.mul(d));
                            p.offset = p.offset.add(&idx.mul(&row));
                            p.inner.remove(0);
                            Place::Row(p)
                        }
                    }
                    Value::Num(_) => Place::Unknown,
                }
            }
            "pointer_expression" if op_text(self.src, n) == "*" => {
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Place::Unknown;
                };
                let saved = std::mem::take(&mut self.product_depth);
                let v = self.expr(arg, depth + 1);
                self.product_depth = saved;
                match v {
                    Value::Ptr(p) => Place::Elem(p),
                    Value::Num(_) => Place::Unknown,
                }
            }
            // `p[i].x = v` writes (part of) the element `p[i]`.
            "field_expression" if self.text(n).contains('.') && !self.text(n).contains("->") => {
                match n.child_by_field_name("argument") {
                    Some(a) if matches!(a.kind(), "subscript_expression" | "pointer_expression") => {
                        self.place(a, depth + 1)
                    }
                    Some(a) if a.kind() == "identifier" => Place::Var(self.text(a).to_string()),
                    _ => Place::Unknown,
                }
            }
            "call_expression" => match self.expand(n, |w, body| w.place(body, depth + 4)) {
                Some(place) => place,
                None => {
                    self.expr(n, depth + 1);
                    Place::Unknown
                }
            },
            _ => {
                self.expr(n, depth + 1);
                Place::Unknown
            }
        }
    }

    fn access_text(&self, n: Node) -> String {
        self.site.as_ref().map(|s| s.1.clone()).unwrap_or_else(|| self.text(n).to_string())
    }

    fn record(&mut self, n: Node, p: &Pointer, kind: AccessKind) {
        if self.dry > 0 {
            return;
        }
        self.model.accesses.push(Access {
            span: self.span(n),
            text: self.access_text(n),
            space: p.space,
            base: p.base.clone(),
            kind,
            index: p.offset.clone(),
            elem: p.elem.clone(),
            loops: self.loop_stack.clone(),
            branches: self.branch_stack.clone(),
            statement: self.statement,
            in_product: self.product_depth > 0,
            accumulated: self.accumulating > 0,
        });
    }

    /// A function-like macro call `M(a, b)`: `f` on the body with the
    /// parameters standing for the argument expressions, each evaluated where
    /// the body uses it (as the preprocessor substitutes text: `&(p)` of
    /// `F4(a[i])` is the address `&a[i]`, no load); `None` when `n` is not one.
    fn expand<T>(&mut self, n: Node<'a>, f: impl FnOnce(&mut Self, Node<'a>) -> T) -> Option<T> {
        let name = self.text(n.child_by_field_name("function")?);
        let args: Vec<Node> = {
            let list = n.child_by_field_name("arguments")?;
            let mut cursor = list.walk();
            list.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect()
        };
        let macros = self.macros;
        let m = macros.get(name).filter(|m| m.params.as_ref().is_some_and(|p| p.len() == args.len()))?;
        let body = m.expr()?;
        if self.lookup(name).is_some() {
            return None;
        }
        let params = m.params.clone().unwrap_or_default();
        let (src, site) = (self.src, self.site.clone());
        let mut scope = Scope::new(HashMap::new(), self.loop_stack.len());
        scope.args = params
            .into_iter()
            .zip(args)
            .map(|(p, node)| (p, MacroArg { node, src, site: site.clone(), recorded: false }))
            .collect();
        self.scopes.push(scope);
        let out = self.in_macro(n, &m.text, |w| f(w, body));
        self.scopes.pop();
        Some(out)
    }

    /// A call of a `__device__` function of the file: its body walked with the
    /// parameters bound to the arguments (its accesses stay on its own lines,
    /// in the caller's loops and branches). The result is opaque.
    fn inline_call(&mut self, n: Node<'a>, name: &str, args: &[Node<'a>], depth: usize) -> Option<Value> {
        if self.calls.len() > MAX_CALL_DEPTH || self.calls.iter().any(|c| c == name) || self.site.is_some() {
            return None;
        }
        let (body, params) = self.callees.get(name).cloned()?;
        let values: Vec<Value> = args.iter().map(|a| self.expr(*a, depth + 1)).collect();
        let dep = values.iter().map(Value::dep).max().unwrap_or(Dep::Uniform);
        let mut vars = self.file_vars.clone();
        for (p, v) in params.iter().zip(values) {
            vars.insert(p.name.clone(), v);
        }
        let scopes = std::mem::replace(&mut self.scopes, vec![Scope::new(vars, self.loop_stack.len())]);
        let branches = self.branch_stack.len();
        self.calls.push(name.to_string());
        self.stmt(body, depth + 1);
        self.calls.pop();
        self.branch_stack.truncate(branches);
        self.scopes = scopes;
        Some(Value::Num(Poly::opaque(self.text(n), dep, true)))
    }

    fn call(&mut self, n: Node<'a>, depth: usize) -> Value {
        let Some(function) = n.child_by_field_name("function") else {
            return Value::Num(Poly::zero());
        };
        let args: Vec<Node> = n
            .child_by_field_name("arguments")
            .map(|a| {
                let mut cursor = a.walk();
                a.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect()
            })
            .unwrap_or_default();
        // `static_cast<T>(e)` and friends.
        if function.kind() == "template_function" {
            let name = function.child_by_field_name("name").map(|x| self.text(x)).unwrap_or("");
            if matches!(name, "static_cast" | "reinterpret_cast" | "const_cast") {
                let ty = function
                    .child_by_field_name("arguments")
                    .map(|a| self.text(a).trim_start_matches('<').trim_end_matches('>'))
                    .unwrap_or("");
                let v = match args.first() {
                    Some(a) => self.expr(*a, depth + 1),
                    None => return Value::Num(Poly::zero()),
                };
                return cast(v, ty);
            }
        }
        let name = self.text(function).to_string();
        if let Some(out) = self.expand(n, |w, body| w.expr(body, depth + 4)) {
            return out;
        }
        // Cooperative groups: `warp.thread_rank()` is the thread's place in its
        // group (lane, or the flat thread index), `meta_group_rank()` the
        // warp's. Opaque, but never uniform: `if (warp.thread_rank() == 0)`
        // picks one thread.
        if function.kind() == "field_expression" && args.is_empty() {
            let method = function.child_by_field_name("field").map(|f| self.text(f)).unwrap_or("");
            let dep = match method {
                "thread_rank" => Some(Dep::Thread),
                "meta_group_rank" => Some(Dep::Warp),
                _ => None,
            };
            if let Some(dep) = dep {
                return Value::Num(Poly::opaque(self.text(n), dep, false));
            }
        }
        if BARRIERS.contains(&name.as_str()) {
            for a in &args {
                self.expr(*a, depth + 1);
            }
            if self.dry == 0 {
                self.model.barriers.push(Barrier {
                    span: self.span(n),
                    text: self.access_text(n),
                    branches: self.branch_stack.clone(),
                });
            }
            return Value::Num(Poly::opaque(&name, Dep::Uniform, false));
        }
        if name.starts_with("atomic") {
            let mut parts = Vec::new();
            for a in args.iter().skip(1) {
                parts.push(self.num(*a, depth + 1));
            }
            if let Some(first) = args.first() {
                let saved = std::mem::take(&mut self.product_depth);
                let addr = self.expr(*first, depth + 1);
                self.product_depth = saved;
                if let Value::Ptr(p) = addr {
                    self.record(n, &p, AccessKind::Atomic(name.clone()));
                    parts.push(p.offset.clone());
                }
            }
            let refs: Vec<&Poly> = parts.iter().collect();
            let mut v = self.opaque_of(n, &refs);
            if let Value::Num(p) = &mut v {
                *p = Poly::opaque(self.text(n), p.dep().max(Dep::Thread), true);
            }
            return v;
        }
        if LOADS.contains(&name.as_str()) || STORES.contains(&name.as_str()) {
            let saved = std::mem::take(&mut self.product_depth);
            let addr = args.first().map(|a| self.expr(*a, depth + 1));
            self.product_depth = saved;
            let rest: Vec<Poly> = args.iter().skip(1).map(|a| self.num(*a, depth + 1)).collect();
            if let Some(Value::Ptr(p)) = addr {
                let load = LOADS.contains(&name.as_str());
                self.record(n, &p, if load { AccessKind::Read } else { AccessKind::Write });
                if load {
                    return Value::Num(Poly::opaque(self.text(n), p.offset.dep(), true));
                }
            }
            let refs: Vec<&Poly> = rest.iter().collect();
            return self.opaque_of(n, &refs);
        }
        if let Some(v) = self.inline_call(n, &name, &args, depth) {
            return v;
        }
        // `fmaf(a, b, acc)` multiplies its first two operands.
        let fma = matches!(name.as_str(), "fma" | "fmaf" | "__fmaf_rn" | "__fma_rn" | "__fmaf_rz" | "__fmul_rn");
        let values: Vec<Poly> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let product = fma && i < 2;
                self.product_depth += product as usize;
                let v = self.num(*a, depth + 1);
                self.product_depth -= product as usize;
                v
            })
            .collect();
        let refs: Vec<&Poly> = values.iter().collect();
        let mut v = self.opaque_of(n, &refs);
        // A shuffle's result comes from another lane.
        if name.starts_with("__shfl")
            && let Value::Num(p) = &mut v
        {
            *p = Poly::opaque(self.text(n), p.dep().max(Dep::Thread), true);
        }
        v
    }
}

impl BranchKind {
    fn dep(&self) -> Dep {
        match self {
            BranchKind::Uniform => Dep::Uniform,
            BranchKind::WarpUniform => Dep::Warp,
            _ => Dep::Thread,
        }
    }
}

fn as_poly(v: &Value) -> Poly {
    match v {
        Value::Num(p) => p.clone(),
        Value::Ptr(p) => {
            let dep = p.offset.dep();
            Poly::opaque(&format!("{} + …", p.base), dep, false)
        }
    }
}

fn add(v: Value, k: Poly) -> Value {
    match v {
        Value::Ptr(mut p) => {
            p.offset = p.offset.add(&k);
            Value::Ptr(p)
        }
        Value::Num(p) => Value::Num(p.add(&k)),
    }
}

/// Neighbouring lanes hold neighbouring values: `tid.x` (or the lane) with
/// coefficient 1 and no other lane-varying term.
fn lane_contiguous(p: &Poly) -> bool {
    let lane = p.coefficient(&Atom::Tid(Dim::X)).add(&p.coefficient(&Atom::Lane));
    lane.as_constant() == Some(1) && p.without(|a| matches!(a, Atom::Tid(Dim::X) | Atom::Lane)).dep() != Dep::Thread
}

fn lane_varying(p: &Poly) -> bool {
    p.atoms().any(|a| a.dep() == Dep::Thread)
}

/// A cast to `ty`: pointers change element type (offsets rescaled), numbers pass through.
fn cast(v: Value, ty: &str) -> Value {
    match v {
        Value::Ptr(p) if ty.contains('*') => Value::Ptr(retype(p, &ElemType::new(ty))),
        other => other,
    }
}

fn retype(mut p: Pointer, to: &ElemType) -> Pointer {
    if p.elem == *to || to.name.is_empty() || to.name == "auto" || to.name == "void" {
        return p;
    }
    p.offset = match (p.elem.bytes, to.bytes) {
        _ if p.offset.is_zero() => Poly::zero(),
        (Some(from), Some(new)) => p
            .offset
            .scale(from as i64)
            .div_exact(new as i64)
            .unwrap_or_else(|| Poly::opaque(&format!("{} offset", p.base), p.offset.dep(), false)),
        _ => Poly::opaque(&format!("{} offset", p.base), p.offset.dep(), false),
    };
    p.elem = to.clone();
    p.inner.clear();
    p
}

pub(crate) use crate::syntax::descendants;
