"""Slow, obviously right versions of the kernels, written from the rules, for property tests."""

from __future__ import annotations

import math


def fair_share(queues: list[dict], total: list[float], k: float = 1.0) -> list[list[float]]:
    """queues: dicts with parent (index or None), priority, quota, limit, weight, request (3 lists each),
    optionally usage (3 floats: historical usage as a fraction of capacity, 0 when absent)."""
    fair = [[0.0] * 3 for _ in queues]

    def divide(members: list[int], amount: float, r: int) -> None:
        def requestable(q):
            lim = queues[q]["limit"][r]
            req = queues[q]["request"][r]
            return req if lim == -1 else min(lim, req)

        def wants(q):
            return max(0.0, requestable(q) - fair[q][r]) if requestable(q) >= fair[q][r] else 0.0

        def satisfied(q):
            lim = queues[q]["limit"][r]
            return queues[q]["request"][r] <= fair[q][r] or (lim != -1 and lim <= fair[q][r])

        left = amount
        for q in members:
            quota = queues[q]["quota"][r]
            give = min(amount if quota == -1 else quota, requestable(q))
            fair[q][r] += give
            left -= give
        if left <= 0:
            return
        prios = sorted({queues[q]["priority"] for q in members}, reverse=True)
        remainders: dict[int, dict[int, float]] = {}
        for p in prios:
            group = [q for q in members if queues[q]["priority"] == p]
            rem: dict[int, float] = {}
            while True:
                again = False
                start = left
                tw = sum(queues[q]["weight"][r] for q in group if wants(q) > 0)
                if tw == 0:
                    break
                w = {}
                for q in group:
                    if not satisfied(q):
                        nw = queues[q]["weight"][r] / tw
                        used = queues[q].get("usage", [0.0, 0.0, 0.0])[r]
                        w[q] = max(0.0, nw + k * (nw - used))
                ws = sum(w.values())
                if ws == 0:
                    break
                for q in group:
                    if left == 0:
                        break
                    if satisfied(q) or queues[q]["weight"][r] == 0:
                        continue
                    want = wants(q)
                    portion = start * (w[q] / ws)  # the kernel's order: a whole share is exactly `start`
                    if want <= portion:
                        give = want
                        rem.pop(q, None)
                    else:
                        give = max(0.0, math.floor(portion))
                        if portion - give > 0:
                            rem[q] = portion - give
                    if give == 0:
                        continue
                    fair[q][r] += give
                    left -= give
                    again = again or want < portion
                if not again or left == 0:
                    break
            remainders[p] = rem
        for p in prios:
            if left <= 0:
                break
            for q in sorted(remainders[p], key=lambda q: (-remainders[p][q], q)):
                if left == 0:
                    break
                give = min(1.0, left)
                fair[q][r] += give
                left -= give

    def walk(members: list[int], amount: list[float]) -> None:
        if not members:
            return
        for r in range(3):
            divide(members, amount[r], r)
        for q in members:
            walk([c for c in range(len(queues)) if queues[c]["parent"] == q], fair[q])

    walk([q for q in range(len(queues)) if queues[q]["parent"] is None], list(total))
    return fair


# -- placement ----------------------------------------------------------------------------------


def place(nodes: list[dict], pods: list[dict], strategy_gpu: str, strategy_cpu: str) -> list[tuple]:
    """nodes: name, gpus, dev_mem, cpu, mem, cpu_used, mem_used, used (list of device shares), frac (counts),
    eligible (set of pod spec ids). pods: kind ('cpu'|'whole'|'fraction'|'memory'), n, share, gpu_mem,
    cpu, mem, spec. Returns (node index, devices, share, pipelined) per pod placed; stops at the first failure.
    No releasing resources: everything is idle or used."""
    out = []
    rank = {n["name"]: r for r, n in enumerate(sorted(nodes, key=lambda n: n["name"]))}
    for pod in pods:
        best = None
        for i, node in enumerate(nodes):
            if pod["spec"] not in node["eligible"]:
                continue
            s = _score(node, pod, strategy_gpu, strategy_cpu)
            if s is None:
                continue
            key = (s, -rank[node["name"]])
            if best is None or key > best[0]:
                best = (key, i)
        if best is None:
            return out
        i = best[1]
        out.append((i, *_take(nodes[i], pod, strategy_gpu)))
    return out


def _need(node, pod):
    if pod["kind"] == "fraction":
        return pod["share"]
    if node["dev_mem"] <= 0:
        return None
    return pod["gpu_mem"] / node["dev_mem"]


def _score(node, pod, sg, sc):
    if node["cpu_used"] + pod["cpu"] > node["cpu"] or node["mem_used"] + pod["mem"] > node["mem"]:
        return None
    free_whole = sum(1 for u in node["used"] if u <= 1e-9)
    tier = 100
    if pod["kind"] == "cpu":
        if node["gpus"] == 0:
            tier += 10
        free = node["cpu"] - node["cpu_used"]
        key = (-free if sc == "binpack" else free / node["cpu"]) if node["cpu"] else 0.0
        return (tier, key)
    if pod["kind"] == "whole":
        if free_whole < pod["n"]:
            return None
    else:
        need = _need(node, pod)
        if need is None or need > 1 + 1e-9:
            return None
        fits = [
            d
            for d in range(node["gpus"])
            if (node["frac"][d] > 0 or node["used"][d] <= 1e-9) and node["used"][d] + need <= 1 + 1e-9
        ]
        if not fits:
            return None
        if sg == "binpack" and any(node["frac"][d] > 0 for d in fits):
            tier += 1000
    key = (-free_whole if sg == "binpack" else free_whole / node["gpus"]) if node["gpus"] else 0.0
    return (tier, key)


def _take(node, pod, sg):
    node["cpu_used"] += pod["cpu"]
    node["mem_used"] += pod["mem"]
    if pod["kind"] == "cpu":
        return ((), 0.0, False)
    if pod["kind"] == "whole":
        devs = [d for d in range(node["gpus"]) if node["used"][d] <= 1e-9][: pod["n"]]
        for d in devs:
            node["used"][d] = 1.0
        return (tuple(devs), 0.0, False)
    need = _need(node, pod)
    cands = [
        d
        for d in range(node["gpus"])
        if (node["frac"][d] > 0 or node["used"][d] <= 1e-9) and node["used"][d] + need <= 1 + 1e-9
    ]

    def pref(d):
        shared = node["frac"][d] > 0
        if sg == "binpack":
            return (-(node["used"][d]) if shared else 1.0, d)
        return (0 if not shared else 1, node["used"][d], d)

    d = min(cands, key=pref)
    node["used"][d] += need
    node["frac"][d] += 1
    return ((d,), need, False)
