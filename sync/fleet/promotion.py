"""Promotion order of targets (each waits for the targets in its `after`) and its cycles.

Linear in targets and `after` entries: fleet.yaml is untrusted input (a pull request's), and a
file of 4 MiB may declare tens of thousands of targets; validate must answer at once either way.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence


def promotion_order(after: Mapping[str, Sequence[str]]) -> tuple[list[str], list[str]]:
    """(the names in promotion order, the names a cycle holds back, as declared). The order:
    repeatedly the first name in declaration order (the mapping's) whose predecessors have all
    come, so a file written in promotion order keeps its order. A predecessor that is not a key
    of `after` is ignored; a name after itself is held back."""
    names = list(after)
    position = {name: i for i, name in enumerate(names)}
    waits = dict.fromkeys(names, 0)
    followers: dict[str, list[str]] = {name: [] for name in names}
    for name, before in after.items():
        for predecessor in dict.fromkeys(before):
            if predecessor in position:
                waits[name] += 1
                followers[predecessor].append(name)
    ready = [position[name] for name in names if waits[name] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(name)
        for follower in followers[name]:
            waits[follower] -= 1
            if waits[follower] == 0:
                heapq.heappush(ready, position[follower])
    placed = set(order)
    return order, [name for name in names if name not in placed]


def cycles(after: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """One cycle of each knot of `after` that holds names back (a strongly connected group of
    two or more), as [a, b, ..., z]: a after b ... z after a, starting at its first declared
    name; knots in declaration order. Names after themselves are not cycles here."""
    _, held = promotion_order(after)
    position = {name: i for i, name in enumerate(after)}
    kept = set(held)
    edges = {n: [p for p in dict.fromkeys(after[n]) if p in kept and p != n] for n in held}
    out = []
    for group in sorted(_strong_groups(held, edges), key=lambda g: min(position[n] for n in g)):
        if len(group) > 1:
            out.append(_cycle_in(set(group), edges, position))
    return out


def _cycle_in(
    group: set[str], edges: Mapping[str, list[str]], position: dict[str, int]
) -> list[str]:
    """A cycle within a strongly connected group: follow the first `after` entry that stays
    in the group until a name repeats (each name of the group has one)."""
    node = min(group, key=position.__getitem__)
    path: list[str] = []
    seen: dict[str, int] = {}
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(p for p in edges[node] if p in group)
    cycle = path[seen[node] :]
    start = cycle.index(min(cycle, key=position.__getitem__))
    return cycle[start:] + cycle[:start]


def _strong_groups(names: list[str], edges: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, without recursion (a chain of targets may be
    longer than Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)

    for root in names:
        if root in index:
            continue
        visit(root)
        work = [(root, 0)]
        while work:
            name, i = work[-1]
            if i < len(edges[name]):
                work[-1] = (name, i + 1)
                nxt = edges[name][i]
                if nxt not in index:
                    visit(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[name] = min(low[name], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[name])
            if low[name] == index[name]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == name:
                        break
                groups.append(group)
    return groups
