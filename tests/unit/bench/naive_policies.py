"""Slow, obviously right placement policies, written from their rules, for the oracle tests.

A cluster here is a list of dicts: cpu, mem, cpu_cap, mem_cap, model, devs
(free milli per present device). A pod is (cpu, mem, k, m, mask).
"""

from __future__ import annotations

import math


def allowed(mask: int, model: int) -> bool:
    return (mask >> model) & 1 == 1


def fits(node: dict, pod) -> bool:
    cpu, mem, k, m, mask = pod
    if node["cpu"] < cpu or node["mem"] < mem:
        return False
    if k == 0:
        return True
    return allowed(mask, node["model"]) and sum(1 for f in node["devs"] if f >= m) >= k


def whole_devices(node: dict, k: int) -> list[int]:
    return [d for d, f in enumerate(node["devs"]) if f == 1000][:k]


def fgd_frag(cpu_free: int, devs: list[int], model: int, shapes: list[tuple]) -> float:
    """FGD: a shape that cannot run sees all idle GPU as fragment, else the too-small devices."""
    total = sum(devs)
    frag = 0.0
    for cpu, k, m, mask, w in shapes:
        runs = m > 0 and allowed(mask, model) and cpu_free >= cpu and sum(f >= m for f in devs) >= k
        frag += w * (sum(f for f in devs if f < m) if runs else total)
    return frag if total else 0.0


def stranded(cpu_free: int, devs: list[int], model: int, shapes: list[tuple]) -> float:
    """fgd-pack: idle GPU left over after filling the node with copies of each shape."""
    total = sum(devs)
    out = 0.0
    for cpu, k, m, mask, w in shapes:
        if m == 0 or not allowed(mask, model):
            out += w * total
            continue
        slots = sum(f // m for f in devs) // k
        copies = min(slots, cpu_free // cpu) if cpu else slots
        out += w * (total - copies * k * m)
    return out if total else 0.0


def fgd_pack_measure(cpu_free: int, devs: list[int], model: int, shapes: list[tuple]) -> float:
    """fgd-pack's measure: stranded idle GPU plus twelve times FGD's fragmentation."""
    return stranded(cpu_free, devs, model, shapes) + 12 * fgd_frag(cpu_free, devs, model, shapes)


def model_pressure(cluster: list[dict], shapes: list[tuple]) -> dict[int, float]:
    """Per model: the constrained shapes' GPU demand (cluster-sized) spread over the models they accept, by capacity."""
    cap: dict[int, int] = {}
    for node in cluster:
        if node["devs"]:
            cap[node["model"]] = cap.get(node["model"], 0) + len(node["devs"])
    demand = [w * k * m for _cpu, k, m, _mask, w in shapes]
    total = sum(demand)
    out = {model: 0.0 for model in cap}
    if total <= 0:
        return out
    for (_cpu, _k, _m, mask, _w), d in zip(shapes, demand, strict=True):
        accepts = [model for model in sorted(cap) if allowed(mask, model)]
        if d == 0 or not accepts or len(accepts) == len(cap):
            continue
        reach = sum(cap[model] for model in accepts)
        for model in accepts:
            out[model] += d / total * sum(cap.values()) / reach
    return out


def after(node: dict, pod, devices: list[int]) -> tuple[int, list[int]]:
    cpu, _mem, _k, m, _mask = pod
    devs = list(node["devs"])
    for d in devices:
        devs[d] -= m
    return node["cpu"] - cpu, devs


def choose(policy: str, cluster: list[dict], pod, u0: float, u1: float, shapes: list[tuple]):
    """(node, devices) the policy picks, or (-1, [])."""
    cpu, mem, k, m, mask = pod
    feasible = [n for n, node in enumerate(cluster) if fits(node, pod)]
    if not feasible:
        return -1, []
    share = k == 1 and m < 1000
    if policy == "random":
        n = feasible[min(int(u0 * len(feasible)), len(feasible) - 1)]
        if not share:
            return n, whole_devices(cluster[n], k)
        ok = [d for d, f in enumerate(cluster[n]["devs"]) if f >= m]
        return n, [ok[min(int(u1 * len(ok)), len(ok) - 1)]]

    max_cpu = max(max(node["cpu_cap"] for node in cluster), 1)
    max_gpu = max(max(len(node["devs"]) * 1000 for node in cluster), 1)

    def tightest(node):
        ok = [d for d, f in enumerate(node["devs"]) if f >= m]
        return [min(ok, key=lambda d: (node["devs"][d], d))]

    def loosest(node):
        ok = [d for d, f in enumerate(node["devs"]) if f >= m]
        return [min(ok, key=lambda d: (-node["devs"][d], d))]

    def frag_choice(node, measure, rounded):
        base = measure(node["cpu"], node["devs"], node["model"], shapes)
        options = [d for d, f in enumerate(node["devs"]) if f >= m] if share else [None]
        best = None
        for d in options:
            devices = [d] if share else whole_devices(node, k)
            c, devs = after(node, pod, devices)
            inc = measure(c, devs, node["model"], shapes) - base
            val = int(100.0 / (1.0 + math.exp(inc / 1000.0))) if rounded else -inc
            if best is None or val > best[0]:
                best = (val, devices)
        return best

    if policy == "bestfit":

        def score(n):
            node = cluster[n]
            left = (node["cpu"] - cpu) / max_cpu * 0.5 + (sum(node["devs"]) - k * m) / max_gpu * 0.5
            return int((1.0 - left) * 100.0)

        devices = tightest
    elif policy == "packing":

        def score(n):
            node = cluster[n]
            devs = node["devs"]
            if m == 0:
                return 0
            idle = sum(f == 1000 for f in devs)
            if idle == len(devs):
                return max(33 - idle, idle)
            picked = sorted((d for d, f in enumerate(devs) if f >= m), key=lambda d: (devs[d], d))[:k]
            fresh = sum(devs[d] == 1000 for d in picked)
            if fresh:
                return max(50 - fresh, 33)
            return max(100 - sum(devs[d] * 100 // 1000 for d in picked) // 10, 50)

        devices = tightest
    elif policy in ("binpack", "spread"):

        def free(n):
            node = cluster[n]
            return node["cpu"] if k == 0 else sum(f == 1000 for f in node["devs"])

        lo, hi = min(free(n) for n in feasible), max(free(n) for n in feasible)

        def score(n):
            node = cluster[n]
            if policy == "spread":
                cap = node["cpu_cap"] if k == 0 else len(node["devs"])
                return free(n) / cap if cap else 0.0
            shared = share and any(0 < f < 1000 and f >= m for f in node["devs"])
            placement = 9.0 if hi == lo else 9.0 * (1 - (free(n) - lo) / (hi - lo))
            return 1000.0 * shared + placement

        devices = tightest if policy == "binpack" else loosest
    elif policy == "fgd":

        def score(n):
            return frag_choice(cluster[n], fgd_frag, True)[0]

        def devices(node):
            return frag_choice(node, fgd_frag, True)[1]
    elif policy == "fgd-pack":
        pressure = model_pressure(cluster, shapes)

        def score(n):
            # frag_choice gives minus the increase; GPUs taken from a model that
            # constrained shapes need cost 3 x its pressure per milli on top
            gain = frag_choice(cluster[n], fgd_pack_measure, False)[0]
            cost = 3.0 * pressure.get(cluster[n]["model"], 0.0) * k * m
            return math.floor(-(-gain + cost) / 10)

        def devices(node):
            return frag_choice(node, fgd_pack_measure, False)[1]
    else:
        raise ValueError(policy)

    n = max(feasible, key=lambda n: (score(n), -n))
    node = cluster[n]
    if k == 0:
        return n, []
    if not share:
        return n, whole_devices(node, k)
    return n, devices(node)
