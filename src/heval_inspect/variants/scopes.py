"""Which name is which: each name of a program, where it is written, and the scope
whose binding it is, as Python resolves it (`Scopes`); the names a problem defines, which
`renamed` renames.
"""

import ast
import bisect
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .text import Source, tokens_of


@dataclass(eq=False)
class _Scope:
    kind: str  # "module", "function" (functions, lambdas, comprehensions) or "class"
    parent: "_Scope | None"
    comprehension: bool = False
    bound: dict[str, list[int]] = field(default_factory=dict)  # name -> where it is bound
    imported: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    functions: dict[str, list[str]] = field(default_factory=dict)  # def name -> parameters
    parameters: set[str] = field(default_factory=set)  # a function's own, bound by its calls

    def bind(self, name: str, offset: int) -> None:
        self.bound.setdefault(name, []).append(offset)


class Scopes(ast.NodeVisitor):
    """Each name of a program, where it is written, and the scope whose binding it is, as
    Python resolves it (local, enclosing function, global, else builtin); `problem_end`: where
    the problem's text ends (the tests follow, then check(entry_point))."""

    def __init__(self, program: str, problem_end: int, entry_point: str):
        self.source = Source(program)
        self.problem_end = problem_end
        self.entry_point = entry_point
        self.candidate: tuple[_Scope, str] | None = None  # the tests' check(candidate)
        self.tokens = [
            t for t in tokens_of(program) if t.type == tokenize.NAME or t.type == tokenize.OP
        ]
        self.token_offsets = [self.source.of_token(t.start) for t in self.tokens]
        self.module = _Scope("module", None)
        self.scope = self.module
        # (scope where written, name, offset): each place a name is written.
        self.occurrences: list[tuple[_Scope, str, int]] = []
        # (scope of the call, function's name, keyword, offset): f(keyword=...).
        self.keywords: list[tuple[_Scope, str, str, int]] = []
        # The keywords of calls whose callee is no name (`obj.method(k=...)`, `f()(k=...)`).
        self.untraced_keywords: set[str] = set()
        self.visit(ast.parse(program))
        self.kept_parameters = self._kept_parameters()

    # Where names are written.

    # ast.AST declares no position, but every node placed here (statements, expressions,
    # arguments, handlers, aliases) has one.
    def _offset(self, node: ast.AST) -> int:
        return self.source.of_node(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def _end(self, node: ast.AST) -> int:
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return self.source.of_node(*end)

    def _name_after(self, offset: int, after: str | None = None) -> int:
        """The offset of the first name token from `offset` on (after the token `after`)."""
        index = bisect.bisect_left(self.token_offsets, offset)
        while index < len(self.tokens):
            token = self.tokens[index]
            if after is None and token.type == tokenize.NAME:
                return self.token_offsets[index]
            if after is not None and token.string == after:
                after = None
            index += 1
        raise ValueError(f"no name after offset {offset}")

    def _written(self, name: str, offset: int, scope: "_Scope | None" = None) -> None:
        if self.source.text[offset : offset + len(name)] != name:
            raise ValueError(f"{name!r} is not where the parser puts it (offset {offset})")
        self.occurrences.append((scope or self.scope, name, offset))

    def _binds(self, name: str, offset: int) -> None:
        scope = self.scope
        if name in scope.declared_global:
            self.module.bind(name, offset)
        elif name not in scope.declared_nonlocal:
            scope.bind(name, offset)

    def _inside(self, scope: _Scope, body: Sequence[ast.AST] | ast.AST) -> None:
        outer, self.scope = self.scope, scope
        for node in body if isinstance(body, Sequence) else [body]:
            self.visit(node)
        self.scope = outer

    # Scopes.

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        offset = self._name_after(self._offset(node), after="def")
        self._binds(node.name, offset)
        self._written(node.name, offset)
        for each in node.decorator_list:
            self.visit(each)
        every = [*node.args.posonlyargs, *node.args.args, node.args.vararg,
                 *node.args.kwonlyargs, node.args.kwarg]  # fmt: skip
        self.scope.functions[node.name] = [each.arg for each in every if each]
        self._arguments(node.args, node.returns)
        body = self._function_body(node.args, node.body)
        if self.scope is self.module and node.name == "check" and node.args.args:
            # The harness calls check(entry_point): `candidate(x=...)` in the tests passes the
            # entry point's parameter x.
            self.candidate = (body, node.args.args[0].arg)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments(node.args, None)
        self._function_body(node.args, node.body)

    def _arguments(self, arguments: ast.arguments, returns: ast.AST | None) -> None:
        """What a function's header evaluates where it is defined: defaults, annotations."""
        for default in [*arguments.defaults, *arguments.kw_defaults]:
            if default is not None:
                self.visit(default)
        for each in [*arguments.posonlyargs, *arguments.args, arguments.vararg,
                     *arguments.kwonlyargs, arguments.kwarg]:  # fmt: skip
            if each is not None and each.annotation is not None:
                self.visit(each.annotation)
        if returns is not None:
            self.visit(returns)

    def _function_body(
        self, arguments: ast.arguments, body: Sequence[ast.stmt] | ast.expr
    ) -> _Scope:
        scope = _Scope("function", self.scope)
        for each in [*arguments.posonlyargs, *arguments.args, arguments.vararg,
                     *arguments.kwonlyargs, arguments.kwarg]:  # fmt: skip
            if each is not None:
                scope.bind(each.arg, self._offset(each))
                scope.parameters.add(each.arg)
                self._written(each.arg, self._offset(each), scope)
        self._inside(scope, body)
        return scope

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        offset = self._name_after(self._offset(node), after="class")
        self._binds(node.name, offset)
        self._written(node.name, offset)
        for each in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(each)
        self._inside(_Scope("class", self.scope), node.body)

    def _comprehension(self, node: Any, parts: list[ast.AST]) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = _Scope("function", self.scope, comprehension=True)
        outer, self.scope = self.scope, scope
        for index, generator in enumerate(generators):
            self.visit(generator.target)
            if index:
                self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in parts:
            self.visit(part)
        self.scope = outer

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])

    # Bindings and uses.

    def visit_Name(self, node: ast.Name) -> None:
        offset = self._offset(node)
        if not isinstance(node.ctx, ast.Load):
            self._binds(node.id, offset)
        self._written(node.id, offset)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # A walrus in a comprehension binds in the scope the comprehension is in.
        scope = self.scope
        while scope.comprehension and scope.parent is not None:
            scope = scope.parent
        offset = self._offset(node.target)
        if node.target.id in scope.declared_global:
            self.module.bind(node.target.id, offset)
        elif node.target.id not in scope.declared_nonlocal:
            scope.bind(node.target.id, offset)
        self._written(node.target.id, offset, scope)
        self.visit(node.value)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                name = alias.asname or alias.name.split(".")[0]
                self.scope.bind(name, self._offset(node))
                self.scope.imported.add(name)

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        declared = (
            self.scope.declared_global
            if isinstance(node, ast.Global)
            else self.scope.declared_nonlocal
        )
        offset = self._offset(node)
        for name in node.names:
            declared.add(name)
            offset = self._name_after(offset + 1)
            self._written(name, offset)
            offset += len(name) - 1

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            start = self._end(node.type) if node.type is not None else self._offset(node)
            offset = self._name_after(start, after="as")
            self._binds(node.name, offset)
            self._written(node.name, offset)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            start = self._offset(node)
            if node.pattern is not None:
                self.visit(node.pattern)
                offset = self._name_after(self._end(node.pattern), after="as")
            else:
                offset = self._name_after(start)
            self._binds(node.name, offset)
            self._written(node.name, offset)
        elif node.pattern is not None:
            self.visit(node.pattern)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            offset = self._name_after(self._offset(node))
            self._binds(node.name, offset)
            self._written(node.name, offset)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        for each in [*node.keys, *node.patterns]:
            self.visit(each)
        if node.rest:
            last = [*node.keys, *node.patterns]
            start = max((self._end(each) for each in last), default=self._offset(node))
            offset = self._name_after(start, after="**")
            self._binds(node.rest, offset)
            self._written(node.rest, offset)

    def visit_Call(self, node: ast.Call) -> None:
        for each in node.keywords:
            if each.arg is None:
                continue
            if isinstance(node.func, ast.Name):
                self.keywords.append((self.scope, node.func.id, each.arg, self._offset(each)))
            else:
                self.untraced_keywords.add(each.arg)
        self.generic_visit(node)

    # Resolution.

    def binding(self, scope: _Scope, name: str) -> tuple[_Scope, str] | None:
        """The scope whose `name` a use in `scope` is (None: a builtin, or undefined)."""
        if name in scope.declared_global:
            return (self.module, name) if name in self.module.bound else None
        current: _Scope | None = scope
        if name in scope.declared_nonlocal:
            current = scope.parent
        elif name in scope.bound:
            return scope, name
        else:
            current = scope.parent
        while current is not None:
            if current.kind == "class" and current is not scope:
                current = current.parent
                continue
            if name in current.declared_global:
                return (self.module, name) if name in self.module.bound else None
            if name in current.bound and name not in current.declared_nonlocal:
                return current, name
            current = current.parent
        return None

    def renamable(self, scope: _Scope, name: str) -> bool:
        """Whether a binding is one the problem defines and `renamed` renames: bound in the
        problem's text, in a module or function scope (a class's names are attributes), not
        by an import, not a dunder, not a parameter that is kept (`_kept_parameters`)."""
        return self._defined(scope, name) and not (
            name in scope.parameters and name in self.kept_parameters
        )

    def _defined(self, scope: _Scope, name: str) -> bool:
        return (
            scope.kind != "class"
            and name not in scope.imported
            and not (name.startswith("__") and name.endswith("__"))
            and any(offset < self.problem_end for offset in scope.bound[name])
        )

    def _traced(self, scope: _Scope, function: str, argument: str) -> tuple[_Scope, str] | None:
        """The problem's function a call `function(argument=...)` in `scope` passes its
        argument to as that parameter, if the call's name says which (None: it does not)."""
        found = self.binding(scope, function)
        if found is not None and found == self.candidate:
            function, found = self.entry_point, self.binding(self.module, self.entry_point)
        if found and self._defined(*found) and argument in found[0].functions.get(function, []):
            return found
        return None

    def _kept_parameters(self) -> set[str]:
        """The parameter names a keyword argument may pass without the program's text saying
        to which function: a method's (`obj.method(k=...)`), a class's (`Box(k=...)` reaches
        `__init__`), one a function reached through another name or forwards with **kwargs.
        Renaming a parameter there would break that call, so every parameter of such a name
        keeps it."""
        return self.untraced_keywords | {
            argument
            for scope, function, argument, _ in self.keywords
            if self._traced(scope, function, argument) is None
        }

    def renamable_occurrences(self) -> Iterator[tuple[int, str, int]]:
        """(offset, name, length) of every place a renamable name is written, keyword
        arguments of the problem's functions included."""
        for scope, name, offset in self.occurrences:
            found = self.binding(scope, name)
            if found and self.renamable(*found):
                yield offset, name, len(name)
        for scope, function, argument, offset in self.keywords:
            if self._traced(scope, function, argument) and argument not in self.kept_parameters:
                yield offset, argument, len(argument)


def names_defined(text: str, test: str, entry_point: str) -> set[str]:
    scopes = Scopes(text + "\n" + test + "\n", len(text), entry_point)
    return {name for _, name, _ in scopes.renamable_occurrences()}
