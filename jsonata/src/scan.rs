//! What a parsed expression references: the `$name` values it reads without binding them,
//! whether it reads its input at the top level, and the function names it mentions.
//!
//! Scopes follow JSONata's: a block `( ... )` and a function body each open one; `:=` binds in
//! the innermost; a function's parameters bind in its body; `@$v` and `#$i` bind along their
//! path. A name bound anywhere in a scope counts as bound in all of it (a function body may
//! call one defined after it; a plain reference before its binding is not told apart).

use std::collections::{BTreeSet, HashSet};

use jsonata_core::ast::{AstNode, BinaryOp, Stage};

/// The functions of JSONata 2.0 and those Step Functions adds.
const FUNCTIONS: &[&str] = &[
    // string
    "string",
    "length",
    "substring",
    "substringBefore",
    "substringAfter",
    "uppercase",
    "lowercase",
    "trim",
    "pad",
    "contains",
    "split",
    "join",
    "match",
    "replace",
    "eval",
    "base64encode",
    "base64decode",
    "encodeUrlComponent",
    "encodeUrl",
    "decodeUrlComponent",
    "decodeUrl",
    "formatNumber",
    "formatBase",
    "formatInteger",
    "parseInteger",
    // numeric
    "number",
    "abs",
    "floor",
    "ceil",
    "round",
    "power",
    "sqrt",
    "random",
    // aggregation
    "sum",
    "max",
    "min",
    "average",
    "count",
    // boolean
    "boolean",
    "not",
    "exists",
    // array
    "append",
    "sort",
    "reverse",
    "shuffle",
    "distinct",
    "zip",
    // object
    "keys",
    "lookup",
    "spread",
    "merge",
    "sift",
    "each",
    "error",
    "assert",
    "type",
    // date and time
    "now",
    "millis",
    "fromMillis",
    "toMillis",
    // higher order
    "map",
    "filter",
    "single",
    "reduce",
    // Step Functions
    "partition",
    "range",
    "hash",
    "uuid",
    "parse",
];

/// Whether `name` is a function of JSONata or of Step Functions.
pub(crate) fn is_function_name(name: &str) -> bool {
    FUNCTIONS.contains(&name)
}

pub(crate) struct Facts {
    pub free: Vec<String>,
    pub reads_context: bool,
    pub calls: BTreeSet<String>,
    /// The field paths below `$states` the expression reads (`["input", "order", "id"]` for
    /// `$states.input.order.id`), each read whole at its end; `None` when it reads `$states`
    /// otherwise (as a value, through a parent step), so all of it must be bound.
    pub states_paths: Option<Vec<Vec<String>>>,
}

pub(crate) fn scan(root: &AstNode) -> Facts {
    let mut walker = Walker {
        scopes: Vec::new(),
        free: Vec::new(),
        reads_context: false,
        calls: BTreeSet::new(),
        states_paths: Vec::new(),
        states_whole: false,
    };
    let mut top = HashSet::new();
    bindings_of(root, &mut top);
    walker.scopes.push(top);
    walker.walk(root, true);
    Facts {
        free: walker.free,
        reads_context: walker.reads_context,
        calls: walker.calls,
        states_paths: (!walker.states_whole).then_some(walker.states_paths),
    }
}

/// The names `:=` binds in the scope `node` is in (not inside nested blocks or functions).
fn bindings_of(node: &AstNode, out: &mut HashSet<String>) {
    jsonata_core::value::with_stack(|| match node {
        AstNode::Block(_) | AstNode::Lambda { .. } => {}
        AstNode::Binary { op, lhs, rhs } => {
            if *op == BinaryOp::ColonEqual {
                if let AstNode::Variable(name) = lhs.as_ref() {
                    out.insert(name.clone());
                }
            } else {
                bindings_of(lhs, out);
            }
            bindings_of(rhs, out);
        }
        other => children(other, &mut |child| bindings_of(child, out)),
    })
}

/// Calls `f` on each direct child expression of `node`.
fn children(node: &AstNode, f: &mut dyn FnMut(&AstNode)) {
    match node {
        AstNode::String(_)
        | AstNode::Name(_)
        | AstNode::Number(_)
        | AstNode::Boolean(_)
        | AstNode::Null
        | AstNode::Undefined
        | AstNode::Placeholder
        | AstNode::Regex { .. }
        | AstNode::Variable(_)
        | AstNode::ParentVariable(_)
        | AstNode::Wildcard
        | AstNode::Descendant
        | AstNode::Parent(_) => {}
        AstNode::Path { steps } => {
            for step in steps {
                f(&step.node);
                for stage in &step.stages {
                    if let Stage::Filter(n) = stage {
                        f(n);
                    }
                }
            }
        }
        AstNode::Binary { lhs, rhs, .. } => {
            f(lhs);
            f(rhs);
        }
        AstNode::Unary { operand, .. } => f(operand),
        AstNode::Function { args, .. } => args.iter().for_each(f),
        AstNode::Call { procedure, args } => {
            f(procedure);
            args.iter().for_each(f);
        }
        AstNode::Lambda { body, .. } => f(body),
        AstNode::Array(items) | AstNode::Block(items) | AstNode::ArrayGroup(items) => {
            items.iter().for_each(f)
        }
        AstNode::Object(pairs) => {
            for (k, v) in pairs {
                f(k);
                f(v);
            }
        }
        AstNode::ObjectTransform { input, pattern } => {
            f(input);
            for (k, v) in pattern {
                f(k);
                f(v);
            }
        }
        AstNode::Conditional {
            condition,
            then_branch,
            else_branch,
        } => {
            f(condition);
            f(then_branch);
            if let Some(e) = else_branch {
                f(e);
            }
        }
        AstNode::FunctionApplication(inner) => f(inner),
        AstNode::Sort { input, terms } => {
            f(input);
            for (t, _) in terms {
                f(t);
            }
        }
        AstNode::Transform {
            location,
            update,
            delete,
        } => {
            f(location);
            f(update);
            if let Some(d) = delete {
                f(d);
            }
        }
    }
}

struct Walker {
    scopes: Vec<HashSet<String>>,
    free: Vec<String>,
    reads_context: bool,
    calls: BTreeSet<String>,
    states_paths: Vec<Vec<String>>,
    states_whole: bool,
}

/// The field names a path reads below `$states` when it starts `$states.name...` with plain
/// steps: up to and including the first step with a predicate other than a constant index
/// (which is a step `[k]`), before the first step that is not a plain name. `None` when the path does not start so.
fn states_path(steps: &[jsonata_core::ast::PathStep]) -> Option<Vec<String>> {
    let plain =
        |step: &jsonata_core::ast::PathStep| step.focus.is_none() && step.index_var.is_none();
    let first = steps.first()?;
    if !matches!(&first.node, AstNode::Variable(name) if name == "states")
        || !first.stages.is_empty()
        || !plain(first)
    {
        return None;
    }
    let mut names = Vec::new();
    for step in &steps[1..] {
        let AstNode::Name(name) = &step.node else {
            break;
        };
        // A name that reads like an index step (`[0]`) ends the path: that form is kept for
        // the index steps.
        if !plain(step) || name.starts_with('[') {
            break;
        }
        names.push(name.clone());
        if !step.stages.is_empty() {
            // A constant index (`items[0]`) goes on as the step `[0]`; any other predicate
            // reads the array whole.
            match crate::fast::constant_index(&step.stages) {
                Some(index) => names.push(format!("[{index}]")),
                None => break,
            }
        }
    }
    (!names.is_empty()).then_some(names)
}

impl Walker {
    fn bound(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(name))
    }

    fn reference(&mut self, name: &str) {
        self.calls.insert(name.to_string());
        if self.bound(name) || is_function_name(name) || self.free.iter().any(|n| n == name) {
            return;
        }
        self.free.push(name.to_string());
    }

    fn scoped(&mut self, scope: HashSet<String>, f: impl FnOnce(&mut Walker)) {
        self.scopes.push(scope);
        f(self);
        self.scopes.pop();
    }

    /// `top`: `node` is evaluated against the expression's own input.
    fn walk(&mut self, node: &AstNode, top: bool) {
        jsonata_core::value::with_stack(|| self.walk_inner(node, top))
    }

    fn walk_inner(&mut self, node: &AstNode, top: bool) {
        match node {
            AstNode::Variable(name) if name.is_empty() => self.reads_context |= top,
            AstNode::Variable(name) => {
                // `$states` read other than through a `$states.name` path: bind all of it.
                if name == "states" && !self.bound(name) {
                    self.states_whole = true;
                }
                self.reference(name)
            }
            AstNode::Parent(_) => {
                // A parent step may climb above a pruned `$states` value.
                self.states_whole = true;
                self.reads_context |= top;
            }
            AstNode::ParentVariable(_)
            | AstNode::Name(_)
            | AstNode::Wildcard
            | AstNode::Descendant => self.reads_context |= top,
            AstNode::Block(items) => {
                let mut scope = HashSet::new();
                for item in items {
                    bindings_of(item, &mut scope);
                }
                self.scoped(scope, |w| items.iter().for_each(|i| w.walk(i, top)));
            }
            AstNode::Lambda { params, body, .. } => {
                let mut scope: HashSet<String> = params.iter().cloned().collect();
                bindings_of(body, &mut scope);
                self.scoped(scope, |w| w.walk(body, false));
            }
            AstNode::Binary {
                op: BinaryOp::ColonEqual,
                lhs,
                rhs,
            } => {
                if !matches!(lhs.as_ref(), AstNode::Variable(_)) {
                    self.walk(lhs, top);
                }
                self.walk(rhs, top);
            }
            AstNode::Function { name, args, .. } => {
                self.calls.insert(name.clone());
                for a in args {
                    self.walk(a, top);
                }
            }
            AstNode::Path { steps } => {
                let mut scope = HashSet::new();
                for step in steps {
                    scope.extend(step.focus.iter().cloned());
                    scope.extend(step.index_var.iter().cloned());
                    for stage in &step.stages {
                        if let Stage::Index(name) = stage {
                            scope.insert(name.clone());
                        }
                    }
                }
                let from_states = if self.bound("states") {
                    None
                } else {
                    states_path(steps)
                };
                self.scoped(scope, |w| {
                    for (i, step) in steps.iter().enumerate() {
                        if i == 0 {
                            if let Some(path) = &from_states {
                                w.states_paths.push(path.clone());
                                w.reference("states");
                                continue;
                            }
                        }
                        w.walk(&step.node, top && i == 0);
                        for stage in &step.stages {
                            if let Stage::Filter(n) = stage {
                                w.walk(n, false);
                            }
                        }
                    }
                });
            }
            AstNode::ObjectTransform { input, pattern } => {
                self.walk(input, top);
                for (k, v) in pattern {
                    self.walk(k, false);
                    self.walk(v, false);
                }
            }
            AstNode::Sort { input, terms } => {
                self.walk(input, top);
                for (t, _) in terms {
                    self.walk(t, false);
                }
            }
            AstNode::FunctionApplication(_) | AstNode::Transform { .. } => {
                children(node, &mut |c| self.walk(c, false))
            }
            other => children(other, &mut |c| self.walk(c, top)),
        }
    }
}
