//! TypeScript type stripping: types are replaced by white space, so the JavaScript that runs
//! has every line and column of the file the user wrote (stack traces and errors point into it
//! without a source map).
//!
//! The file is parsed with oxc's parser; a walk over its tree collects the spans that are
//! TypeScript only (annotations, interfaces, type aliases, `as`/`satisfies`, `!`, generics,
//! modifiers, overloads, `declare`, type-only imports and exports) and blanks them. Constructs
//! that would need code generation (enums, namespaces with code, parameter properties,
//! `import x = require(...)`, `export =`) are refused with their position, as in other
//! strip-only TypeScript runtimes: write them as plain objects or fields.

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, SourceType, Span};

use crate::error::Position;

/// A syntax error or an unsupported construct, with its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripError {
    /// Where it is.
    pub position: Position,
    /// What is wrong.
    pub message: String,
}

/// The JavaScript of `source`: with its TypeScript types blanked when `typescript`, checked for
/// syntax errors either way. Lines and columns are those of `source`.
///
/// # Errors
/// The first syntax error or unsupported construct, with its position.
pub fn strip_types(source: &str, typescript: bool) -> Result<String, StripError> {
    let allocator = Allocator::default();
    let source_type = if typescript {
        SourceType::ts()
    } else {
        SourceType::mjs()
    };
    let parsed = oxc_parser::Parser::new(&allocator, source, source_type).parse();
    if let Some(error) = parsed.diagnostics.errors().next() {
        let offset = error.labels.first().map_or(0, |label| label.offset());
        return Err(StripError {
            position: Position::at_offset(source, offset as usize),
            message: error.message.to_string(),
        });
    }
    if !typescript {
        return Ok(source.to_owned());
    }
    let mut stripper = Stripper {
        source,
        blank: Vec::new(),
        error: None,
    };
    stripper.visit_program(&parsed.program);
    if let Some((offset, message)) = stripper.error {
        return Err(StripError {
            position: Position::at_offset(source, offset as usize),
            message,
        });
    }
    let mut bytes = source.as_bytes().to_vec();
    for (start, end) in stripper.blank {
        let end = (end as usize).min(bytes.len());
        for byte in bytes.iter_mut().take(end).skip(start as usize) {
            if *byte != b'\n' && *byte != b'\r' {
                *byte = b' ';
            }
        }
    }
    // Only whole characters are blanked (spans fall on character boundaries, and every byte of
    // a blanked character becomes a space), so the text stays UTF-8.
    String::from_utf8(bytes).map_err(|_| StripError {
        position: Position { line: 1, column: 1 },
        message: "the file is not valid UTF-8 after stripping types".to_owned(),
    })
}

struct Stripper<'s> {
    source: &'s str,
    blank: Vec<(u32, u32)>,
    error: Option<(u32, String)>,
}

const MODIFIERS: [&str; 7] = [
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "declare",
    "abstract",
];

impl Stripper<'_> {
    fn span(&mut self, span: Span) {
        self.blank.push((span.start, span.end));
    }

    fn refuse(&mut self, at: u32, what: &str) {
        if self.error.is_none() {
            self.error = Some((
                at,
                format!(
                    "{what} is TypeScript that needs code generation, which Portico does not do \
                     (it only removes types); write it as plain JavaScript"
                ),
            ));
        }
    }

    /// Blanks `span` and a comma right after it (a removed list item).
    fn item(&mut self, span: Span) {
        self.span(span);
        let rest = &self.source[span.end as usize..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with(',') {
            let comma = span.end + skipped as u32;
            self.blank.push((comma, comma + 1));
        }
    }

    /// Blanks the TypeScript modifier words between `start` and `end` (the text before a class
    /// member's name).
    fn modifiers(&mut self, start: u32, end: u32) {
        let text = &self.source[start as usize..end as usize];
        let mut at = 0;
        for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
            if MODIFIERS.contains(&word) {
                let from = start + at as u32;
                self.blank.push((from, from + word.len() as u32));
            }
            at += word.len() + 1;
        }
    }

    /// Blanks a `?` or `!` right after `end` (skipping `]` and white space).
    fn marks_after(&mut self, end: u32) {
        for (i, c) in self.source[end as usize..].char_indices() {
            match c {
                '?' | '!' => {
                    let at = end + i as u32;
                    self.blank.push((at, at + 1));
                }
                ']' | ' ' | '\t' | '\n' | '\r' => {}
                _ => break,
            }
        }
    }

    /// The first occurrence of `word` as a whole word in `[start, end)`.
    fn find_word(&self, start: u32, end: u32, word: &str) -> Option<u32> {
        let text = &self.source[start as usize..end as usize];
        let mut from = 0;
        while let Some(i) = text[from..].find(word) {
            let at = from + i;
            let before = text[..at].chars().next_back();
            let after = text[at + word.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !ident(before) && !ident(after) {
                return Some(start + at as u32);
            }
            from = at + word.len();
        }
        None
    }

    fn is_type_only_declaration(declaration: &Declaration<'_>) -> bool {
        match declaration {
            Declaration::TSInterfaceDeclaration(_) | Declaration::TSTypeAliasDeclaration(_) => true,
            Declaration::VariableDeclaration(v) => v.declare,
            Declaration::FunctionDeclaration(f) => f.declare || f.body.is_none(),
            Declaration::ClassDeclaration(c) => c.declare,
            Declaration::TSEnumDeclaration(e) => e.declare,
            Declaration::TSExternalModuleDeclaration(m) => m.declare,
            Declaration::TSNamespaceDeclaration(m) => m.declare,
            Declaration::TSGlobalDeclaration(_) => true,
            Declaration::TSImportEqualsDeclaration(_) => false,
        }
    }
}

impl<'a> Visit<'a> for Stripper<'_> {
    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.span(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.span(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.span(it.span);
    }

    fn visit_declaration(&mut self, it: &Declaration<'a>) {
        if Self::is_type_only_declaration(it) {
            self.span(it.span());
            return;
        }
        walk::walk_declaration(self, it);
    }

    fn visit_ts_enum_declaration(&mut self, it: &TSEnumDeclaration<'a>) {
        self.refuse(it.span.start, "an enum");
    }

    fn visit_ts_namespace_declaration(&mut self, it: &TSNamespaceDeclaration<'a>) {
        self.refuse(it.span.start, "a namespace");
    }

    fn visit_ts_external_module_declaration(&mut self, it: &TSExternalModuleDeclaration<'a>) {
        self.refuse(it.span.start, "a module declaration");
    }

    fn visit_ts_import_equals_declaration(&mut self, it: &TSImportEqualsDeclaration<'a>) {
        self.refuse(it.span.start, "`import ... = require(...)`");
    }

    fn visit_ts_export_assignment(&mut self, it: &TSExportAssignment<'a>) {
        self.refuse(it.span.start, "`export =`");
    }

    fn visit_ts_namespace_export_declaration(&mut self, it: &TSNamespaceExportDeclaration<'a>) {
        self.span(it.span);
    }

    fn visit_export_named_declaration(&mut self, it: &ExportNamedDeclaration<'a>) {
        if it.export_kind.is_type() {
            self.span(it.span);
            return;
        }
        walk::walk_export_named_declaration(self, it);
    }

    fn visit_export_from_declaration(&mut self, it: &ExportFromDeclaration<'a>) {
        if it.export_kind.is_type() {
            self.span(it.span);
            return;
        }
        walk::walk_export_from_declaration(self, it);
    }

    fn visit_export_declaration(&mut self, it: &ExportDeclaration<'a>) {
        if Self::is_type_only_declaration(&it.declaration) {
            self.span(it.span);
            return;
        }
        walk::walk_export_declaration(self, it);
    }

    fn visit_export_default_declaration(&mut self, it: &ExportDefaultDeclaration<'a>) {
        if let ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) = &it.declaration {
            self.span(it.span);
            return;
        }
        if let ExportDefaultDeclarationKind::FunctionDeclaration(f) = &it.declaration
            && f.body.is_none()
        {
            self.span(it.span);
            return;
        }
        walk::walk_export_default_declaration(self, it);
    }

    fn visit_export_all_declaration(&mut self, it: &ExportAllDeclaration<'a>) {
        if it.export_kind.is_type() {
            self.span(it.span);
        }
    }

    fn visit_export_specifier(&mut self, it: &ExportSpecifier<'a>) {
        if it.export_kind.is_type() {
            self.item(it.span);
        }
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        if it.import_kind.is_type() {
            self.span(it.span);
            return;
        }
        walk::walk_import_declaration(self, it);
    }

    fn visit_import_specifier(&mut self, it: &ImportSpecifier<'a>) {
        if it.import_kind.is_type() {
            self.item(it.span);
        }
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        self.blank.push((it.expression.span().end, it.span.end));
        self.visit_expression(&it.expression);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        self.blank.push((it.expression.span().end, it.span.end));
        self.visit_expression(&it.expression);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        self.blank.push((it.expression.span().end, it.span.end));
        self.visit_expression(&it.expression);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.blank.push((it.span.start, it.expression.span().start));
        self.visit_expression(&it.expression);
    }

    fn visit_ts_instantiation_expression(&mut self, it: &TSInstantiationExpression<'a>) {
        self.span(it.type_arguments.span);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_this_parameter(&mut self, it: &TSThisParameter<'a>) {
        self.item(it.span);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: oxc_syntax::scope::ScopeFlags) {
        if it.declare || it.body.is_none() {
            self.span(it.span);
            return;
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.refuse(it.span.start, "a constructor parameter property");
            return;
        }
        if it.optional {
            self.marks_after(it.pattern.span().end);
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite {
            self.marks_after(it.id.span().end);
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.declare {
            self.span(it.span);
            return;
        }
        if it.r#abstract
            && let Some(at) = self.find_word(it.span.start, it.body.span.start, "abstract")
        {
            self.blank.push((at, at + "abstract".len() as u32));
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let from = it
                .heritage
                .as_ref()
                .map(|h| h.span().end)
                .or(it.id.as_ref().map(|id| id.span.end))
                .unwrap_or(it.span.start);
            if let Some(at) = self.find_word(from, first.span.start, "implements") {
                self.blank.push((at, last.span.end));
            }
        }
        walk::walk_class(self, it);
    }

    fn visit_class_element(&mut self, it: &ClassElement<'a>) {
        if let ClassElement::TSIndexSignature(signature) = it {
            self.span(signature.span);
            return;
        }
        walk::walk_class_element(self, it);
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        if it.declare || it.r#type.is_abstract() {
            self.span(it.span);
            return;
        }
        self.modifiers(it.span.start, it.key.span().start);
        if it.optional || it.definite {
            self.marks_after(it.key.span().end);
        }
        walk::walk_property_definition(self, it);
    }

    fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
        if it.r#type.is_abstract() {
            self.span(it.span);
            return;
        }
        self.modifiers(it.span.start, it.key.span().start);
        walk::walk_accessor_property(self, it);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        if it.value.body.is_none() || it.r#type.is_abstract() {
            self.span(it.span);
            return;
        }
        self.modifiers(it.span.start, it.key.span().start);
        if it.optional {
            self.marks_after(it.key.span().end);
        }
        walk::walk_method_definition(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(ts: &str) -> String {
        match strip_types(ts, true) {
            Ok(js) => js,
            Err(e) => panic!("{e:?} in {ts}"),
        }
    }

    /// The stripped text, with runs of spaces squeezed, for readable expectations.
    fn squeezed(ts: &str) -> String {
        let js = strip(ts);
        assert_eq!(js.len(), ts.len(), "positions kept");
        js.split(' ')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn annotations_and_declarations_become_white_space() {
        assert_eq!(squeezed("let x: number = 1;"), "let x = 1;");
        assert_eq!(
            squeezed("function f<T>(a: T, b?: string): T { return a as T; }"),
            "function f (a , b ) { return a ; }"
        );
        assert_eq!(
            squeezed("interface A { x: number }\nlet a = 1;"),
            "\nlet a = 1;"
        );
        assert_eq!(
            squeezed("export type B = string;\nexport const b = 2;"),
            "\nexport const b = 2;"
        );
        assert_eq!(squeezed("const y = z!.w satisfies Q;"), "const y = z .w ;");
        assert_eq!(
            squeezed("import { type A, b } from './x';"),
            "import { b } from './x';"
        );
        assert_eq!(squeezed("import type { A } from './x';\nf();"), "\nf();");
        assert_eq!(
            squeezed("const g = <T,>(v: T): T => v;"),
            "const g = (v ) => v;"
        );
        assert_eq!(squeezed("declare const q: number;\nq2();"), "\nq2();");
        assert_eq!(
            squeezed("function h(a: string): void;\nfunction h(a: any) {}"),
            "\nfunction h(a ) {}"
        );
        assert_eq!(squeezed("let k!: number;"), "let k ;");
        assert_eq!(squeezed("f<string>(1);"), "f (1);");
    }

    #[test]
    fn class_members_lose_their_modifiers() {
        let js = squeezed(
            "abstract class C<T> extends D<T> implements E, F {\n  private readonly x: number = 1;\n  y?: string;\n  declare z: number;\n  public static m(a: T): void {}\n  abstract n(): void;\n  [key: string]: unknown;\n}",
        );
        assert_eq!(
            js,
            "class C extends D {\n x = 1;\n y ;\n \n static m(a ) {}\n \n \n}"
        );
    }

    #[test]
    fn lines_and_columns_are_kept() {
        let ts = "const a: {\n  x: number;\n} = { x: 1 };\nthrow new Error('here');";
        let js = strip(ts);
        assert_eq!(js.lines().count(), ts.lines().count());
        assert_eq!(js.lines().nth(3), ts.lines().nth(3));
    }

    #[test]
    fn code_generating_typescript_is_refused_with_its_position() {
        let e = strip_types("let a = 1;\n  enum Color { Red }", true);
        let Err(e) = e else { panic!("enum accepted") };
        assert_eq!(e.position, Position { line: 2, column: 3 });
        assert!(e.message.contains("an enum"), "{}", e.message);
        assert!(strip_types("class P { constructor(private x: number) {} }", true).is_err());
        assert!(strip_types("namespace N { export const a = 1; }", true).is_err());
    }

    #[test]
    fn syntax_errors_have_their_position() {
        let Err(e) = strip_types("let a = 1;\nlet b = ;", false) else {
            panic!("accepted")
        };
        assert_eq!(e.position.line, 2);
        assert!(e.position.column >= 8, "{:?}", e.position);
        assert!(
            strip_types("let a: number = 1;", false).is_err(),
            "types in a .js file"
        );
    }
}
