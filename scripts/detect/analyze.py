#!/usr/bin/env python3
"""
Where the learned layout detector's remaining errors are, out of fold: the figures of
bench/README.md, "Where the rest of the gap is" and "How far a form's own convention goes".
Reads what `npm run train:detect` leaves in .cache/detect (the export and folds/oof.npz: every
proposal's out-of-fold margin (the second field model's; -inf under its floor; `first`: the first
model's), class, placement margin and outcome) and uses train.py's own
functions, so its rules are the ones trained with.

    /usr/bin/python3 scripts/detect/analyze.py misses          # missed truth boxes, wrong boxes, printed-nothing conventions
    /usr/bin/python3 scripts/detect/analyze.py calibration     # one calibration table, or one per class or per kind
    /usr/bin/python3 scripts/detect/analyze.py trees 120 200   # F1 of the first field model alone with its first N trees (retrains the 5 folds: minutes)
    /usr/bin/python3 scripts/detect/analyze.py oracle          # F1 with each form's (then each form and kind's) margins shifted by an offset chosen with the truth

With `trees` and a count above train.py's FIELD_ROUNDS, every field model of the run (the inner
ones that weight the training rows too) is trained with that many rounds.

Nothing here is used by detection or training; it only reads and prints. It needs the Python of
`npm run train:detect` (numpy, scikit-learn and XGBoost: Debian's python3-xgboost and python3-sklearn).
"""
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402

CLASSES = T.CLASSES
# The margin offsets the oracle tries (`oracle`).
OFFSETS = (-3, -1.5, 0, 1.5, 3)


def box(a, cols):
    """The x, y, w, h columns of rows of the export (`cols`: their indexes by name)."""
    return a[:, [cols["x"], cols["y"], cols["w"], cols["h"]]]


class Data:
    def __init__(self):
        oof = os.path.join(T.FOLDS_DIR, "oof.npz")
        if not os.path.exists(oof):
            sys.exit(f"{oof} is missing: run `npm run train:detect` first")
        self.header, self.X, self.rows, self.truth = T.load()
        self.o = np.load(oof)
        h = self.header
        self.c = {n: T.column(h, n) for n in h["rowColumns"]}
        self.tc = {n: T.column(h, n, "truthColumns") for n in h["truthColumns"]}
        self.F = {n: i for i, n in enumerate(h["features"])}
        self.kinds = h["kinds"]
        self.forms = h["forms"]
        fold_of, _ = T.assign_folds(h, self.truth)
        form_fold = np.array([fold_of.get(f["repo"], -1) for f in self.forms])
        self.row_fold = form_fold[self.rows[:, self.c["form"]].astype(int)]
        self.truth_fold = form_fold[self.truth[:, self.tc["form"]].astype(int)]
        self.real_rows = self.row_fold >= 0
        self.real_truth = int((self.truth_fold >= 0).sum())
        if len(self.o["margins"]) != len(self.rows) or not np.array_equal(self.o["fold"], self.row_fold):
            sys.exit("oof.npz is not of this export: run `npm run train:detect` again")
        self.kind = self.rows[:, self.c["kind"]].astype(int)
        self.best_iou = self.rows[:, self.c["bestIou"]]
        # The rows of each page, for lookups by page: sorted by (form, page), stable.
        page_of_row = self.rows[:, self.c["form"]] * 10000 + self.rows[:, self.c["page"]]
        self._order = np.argsort(page_of_row, kind="stable")
        self._pages = page_of_row[self._order]

    def rows_of_page(self, form, page):
        """The indexes of a page's proposals, in export order."""
        key = form * 10000 + page
        return self._order[np.searchsorted(self._pages, key) : np.searchsorted(self._pages, key, side="right")]

    def truth_page(self, g):
        return int(self.truth[g, self.tc["form"]]), int(self.truth[g, self.tc["page"]])

    def fit(self, margins, group=None, min_kept=300):
        """
        As train.py, per fold k on the other folds' boxes that suppression keeps: calibration (one
        table, or one per value of `group`, the global one for groups of fewer than `min_kept`
        kept boxes) and the threshold. Returns (per fold, the table of each group; the thresholds).
        """
        o, rows = self.o, self.rows
        kept, right = T.page_outcomes(self.header, rows, self.truth, margins, o["classes"], rank=margins + T.PLACEMENT_WEIGHT * o["place"])
        group = np.zeros(len(rows), dtype=int) if group is None else group
        tables, thresholds = [], []
        for k in range(T.K):
            others = kept & self.real_rows & (self.row_fold != k)
            overall = T.calibrate(margins[others], right[others])
            by_group = {}
            for g in np.unique(group):
                own = others & (group == g)
                by_group[g] = T.calibrate(margins[own], right[own]) if own.sum() >= min_kept else overall
            tables.append(by_group)
            p = self.probabilities(margins, by_group, group, others)
            thresholds.append(T.best_threshold(p, right[others], int(((self.truth_fold != k) & (self.truth_fold >= 0)).sum())))
        return tables, np.array(thresholds)

    @staticmethod
    def probabilities(margins, by_group, group, rows):
        """The calibrated probabilities of `rows` (a mask) by their group's table."""
        p = np.zeros(len(margins))
        for g, table in by_group.items():
            own = rows & (group == g)
            p[own] = T.apply_calibration(table, margins[own])
        return p[rows]

    def accept(self, margins, fitted, group=None):
        """The boxes accepted and right with `margins` and a `fit` (its tables and thresholds, per fold)."""
        tables, thresholds = fitted
        group = np.zeros(len(self.rows), dtype=int) if group is None else group
        probs = np.zeros(len(self.rows))
        for k in range(T.K):
            fold = self.row_fold == k
            probs[fold] = self.probabilities(margins, tables[k], group, fold)
        reach = self.real_rows & (probs >= np.where(self.real_rows, thresholds[np.maximum(self.row_fold, 0)], np.inf))
        return T.page_outcomes(self.header, self.rows, self.truth, margins, self.o["classes"], among=reach, rank=margins + T.PLACEMENT_WEIGHT * self.o["place"])

    def outcome(self, margins, group=None, min_kept=300):
        """As train.py: `fit`, then `accept`. (accepted, right, P, R, F1)."""
        accepted, ok = self.accept(margins, self.fit(margins, group, min_kept), group)
        a, m = int(accepted.sum()), int((accepted & ok).sum())
        p_, r_ = m / max(1, a), m / self.real_truth
        return a, m, p_, r_, 2 * p_ * r_ / max(1e-9, p_ + r_)


def best_proposals(d):
    """For every truth box of a real form: the index of the proposal of its page nearest to it (IoU) and that IoU."""
    c, tc = d.c, d.tc
    best = np.full(len(d.truth), -1)
    best_iou = np.zeros(len(d.truth))
    for g in np.flatnonzero(d.truth_fold >= 0):
        idx = d.rows_of_page(*d.truth_page(g))
        if len(idx) == 0:
            continue
        ious, _ = T.iou_matrix(box(d.truth[g : g + 1], tc), box(d.rows[idx], c))
        j = int(np.argmax(ious[0]))
        best[g], best_iou[g] = idx[j], ious[0, j]
    return best, best_iou


def misses(d):
    o, c, tc = d.o, d.c, d.tc
    accepted, right = o["accepted"], o["right_ranked"]
    # Truth boxes found: each right box (page_outcomes found it a truth box of its own) matched again
    # here, greedily in row order; where two truth boxes could take one box, which one is found may
    # differ from page_outcomes' order (with the committed model the count is the same: 24,970).
    found = np.zeros(len(d.truth), dtype=bool)
    hits = np.flatnonzero(accepted & right)
    by_page = collections.defaultdict(list)
    for g in np.flatnonzero(d.truth_fold >= 0):
        by_page[d.truth_page(g)].append(g)
    hits_by_page = collections.defaultdict(list)
    for r in hits:
        hits_by_page[(int(d.rows[r, c["form"]]), int(d.rows[r, c["page"]]))].append(r)
    for key, rs in hits_by_page.items():
        gs = by_page.get(key, [])
        if not gs:
            continue
        ious, _ = T.iou_matrix(box(d.rows[rs], c), box(d.truth[gs], tc))
        taken = np.zeros(len(gs), dtype=bool)
        for n in range(len(rs)):
            cand = np.where(~taken & (ious[n] >= T.MATCH_IOU), ious[n], -1)
            b = int(np.argmax(cand))
            if cand[b] >= T.MATCH_IOU:
                taken[b] = True
        for g, t in zip(gs, taken):
            found[g] = t
    real = d.truth_fold >= 0
    missed = real & ~found
    print(f"truth boxes of real forms {int(real.sum())}, found {int((real & found).sum())}, missed {int(missed.sum())}")

    best, best_iou = best_proposals(d)
    truth_class = d.truth[:, tc["cls"]].astype(int)
    for k, name in enumerate(CLASSES):
        of = real & (truth_class == k)
        print(f"  {name}: {int(of.sum())}, with a proposal at IoU >= {T.MATCH_IOU} {int((of & (best_iou >= T.MATCH_IOU)).sum())}, found {int((of & found).sum())}")
    none_near = missed & (best_iou < 0.05)
    near = missed & (best_iou >= 0.05) & (best_iou < T.MATCH_IOU)
    print(f"\nno proposal at IoU >= {T.MATCH_IOU}: {int((real & (best_iou < T.MATCH_IOU)).sum())} (candidate recall {1 - (real & (best_iou < T.MATCH_IOU)).sum() / real.sum():.3f})")
    repos = {d.forms[int(f)]["repo"] for f in d.truth[none_near, tc["form"]]}
    none_classes = d.truth[none_near, tc["cls"]]
    by_class = ", ".join(f"{name} {int((none_classes == k).sum())}" for k, name in enumerate(CLASSES))
    print(f"  none even at IoU 0.05: {int(none_near.sum())} ({by_class}; {len(repos)} repositories)")
    print("  the nearest proposal's kind, and the truth box against it (quartiles: width ratio, height ratio):")
    groups = collections.defaultdict(list)
    for g in np.flatnonzero(near):
        r = best[g]
        px, py, pw, ph = d.rows[r, [c["x"], c["y"], c["w"], c["h"]]]
        tw, th = d.truth[g, [tc["w"], tc["h"]]]
        groups[d.kinds[int(d.rows[r, c["kind"]])]].append((tw / pw, th / ph))
    for kind, v in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        a = np.array(v)
        q = lambda i: "/".join(f"{x:.2f}" for x in np.percentile(a[:, i], [25, 50, 75]))
        print(f"    {kind:20s} {len(v):5d}   w {q(0)}   h {q(1)}")

    taken_not = missed & (best_iou >= T.MATCH_IOU)
    # The best proposal at IoU >= 0.5 may not be the one scored highest: per truth box, the highest
    # calibrated probability among its proposals at IoU >= 0.5, and that proposal's kind.
    print(f"\na proposal at IoU >= {T.MATCH_IOU} but not found: {int(taken_not.sum())}; by the kind of the one scored highest (and how many of them under 0.1):")
    top = np.full(len(d.truth), -1)
    top_p = np.full(len(d.truth), -1.0)
    pages = collections.defaultdict(list)
    for g in np.flatnonzero(taken_not):
        pages[d.truth_page(g)].append(g)
    for page, gs in pages.items():
        idx = d.rows_of_page(*page)
        ious, _ = T.iou_matrix(box(d.truth[gs], tc), box(d.rows[idx], c))
        for n, g in enumerate(gs):
            ok = ious[n] >= T.MATCH_IOU
            j = int(np.argmax(np.where(ok, o["probs"][idx], -1)))
            top[g], top_p[g] = idx[j], o["probs"][idx][j]
    by_kind = collections.Counter(d.kinds[int(d.rows[top[g], c["kind"]])] for g in np.flatnonzero(taken_not))
    low = collections.Counter(d.kinds[int(d.rows[top[g], c["kind"]])] for g in np.flatnonzero(taken_not & (top_p < 0.1)))
    by_class = collections.Counter((d.kinds[int(d.rows[top[g], c["kind"]])], int(truth_class[g])) for g in np.flatnonzero(taken_not))
    for kind, n in by_kind.most_common():
        classes = ", ".join(f"{name} {by_class[kind, k]}" for k, name in enumerate(CLASSES) if by_class[kind, k])
        print(f"    {kind:20s} {n:5d}   under 0.1: {low[kind]:5d}   truth boxes: {classes}")

    print("\nwhere nothing is printed, is there a field? (proposals of real forms, a field = IoU >= 0.5 with a truth box)")
    X, F = d.X, d.F
    field = d.best_iou >= T.MATCH_IOU
    unmarked = (X[:, F["shape_iou"]] < 0.3) & (X[:, F["glyph_inside"]] == 0) & (X[:, F["sides_closed"]] == 0)
    in_cell = X[:, F["cell_exists"]] == 1
    named = (X[:, F["label_colon"]] == 1) & in_cell & (X[:, F["cell_text_words"]] <= 3) & (X[:, F["cell_touch_right"]] == 1)
    cases = [
        ("option-box", "beside an option word, in a cell, nothing printed", in_cell & unmarked),
        ("option-box", "beside an option word, in no cell, nothing printed", ~in_cell & unmarked),
        ("label-run", "after a label, in a cell, nothing printed", in_cell & unmarked),
        ("cell-right-of-label", "the rest of a cell after a colon label (<= 3 words in it)", named),
        ("label-run", "a run after a colon label to a cell's right edge (<= 3 words in it)", named),
    ]
    for kind, what, mask in cases:
        sel = d.real_rows & (d.kind == d.kinds.index(kind)) & mask
        forms_all = len(np.unique(d.rows[sel, c["form"]]))
        forms_field = len(np.unique(d.rows[sel & field, c["form"]]))
        mean = lambda m: float(o["probs"][m].mean()) if m.any() else float("nan")
        print(f"  {what}: {int(sel.sum())} proposals, {int((sel & field).sum())} fields ({(sel & field).sum() / max(1, sel.sum()):.1%}), on {forms_field} of {forms_all} forms; mean probability: fields {mean(sel & field):.2f}, others {mean(sel & ~field):.2f}")

    wrong = accepted & ~right & d.real_rows
    b = d.best_iou[wrong]
    print(f"\nwrong boxes: {int(wrong.sum())} of {int((accepted & d.real_rows).sum())} accepted; overlapping the nearest truth box at IoU < 0.05: {np.mean(b < 0.05):.0%}, 0.05-0.3: {np.mean((b >= 0.05) & (b < 0.3)):.0%}, 0.3 or more: {np.mean(b >= 0.3):.0%}")
    print("  the misplaced ones (IoU 0.3 or more) by kind, and the share on the kind's two forms that hold most:")
    misplaced = wrong & (d.best_iou >= 0.3)
    for kind, n in collections.Counter(d.kinds[k] for k in d.kind[misplaced]).most_common(8):
        sel = misplaced & (d.kind == d.kinds.index(kind))
        per_form = collections.Counter(d.rows[sel, c["form"]].astype(int)).most_common(2)
        print(f"    {kind:20s} {n:5d}   two forms: {sum(v for _, v in per_form) / n:.0%} ({', '.join(d.forms[f]['name'] for f, _ in per_form)})")


def calibration(d):
    margins = d.o["margins"]
    for name, group in [("one table", None), ("per class", d.o["classes"].astype(int)), ("per kind", d.kind)]:
        a, m, p, r, f1 = d.outcome(margins, group)
        print(f"{name:10s}: {a} accepted, {m} right: precision {p:.4f}, recall {r:.4f}, F1 {f1:.4f}")


def trees(d, counts):
    """Retrains the first fold field models as train.py does, and scores each fold with its first N trees (no second model)."""
    import xgboost as xgb

    T.FIELD_ROUNDS = max(T.FIELD_ROUNDS, max(counts))
    margins = {n: np.zeros(len(d.rows)) for n in counts}
    inner = T.inner_margins(d.X, d.best_iou, d.row_fold)
    for k in range(T.K):
        train = d.row_fold != k
        field = T.train_field(d.X[train], d.best_iou[train], T.noise_weights(inner[k], d.best_iou, train)[train])
        held_out = xgb.DMatrix(d.X[~train], nthread=2)
        for n in counts:
            margins[n][~train] = field.predict(held_out, output_margin=True, iteration_range=(0, n))
        print(f"fold {k} trained", flush=True)
    for n in counts:
        a, m, p, r, f1 = d.outcome(margins[n])
        print(f"{n} field trees: {a} accepted, {m} right: precision {p:.4f}, recall {r:.4f}, F1 {f1:.4f}", flush=True)


def oracle(d):
    """
    How much of the gap a form's own convention could close, measured with the truth (an oracle,
    not a method): every form's out-of-fold margins shifted by the offset (of OFFSETS) that gives
    that form its best F1, the folds' calibration and thresholds left as fitted; then, starting
    again from no shift, per proposal kind in turn (one pass), each form's margins of that kind
    shifted by the offset that gives the form its best F1 with the other kinds as chosen so far.
    A search on a grid, form by form: what such offsets can give at least, not at most. If even
    that stays under the goal, it suggests that the errors lie less in a form's overall level or
    its choice of kinds than in which boxes of a kind are fields within the form, and in the truth
    boxes with no proposal.
    """
    margins = d.o["margins"]
    fitted = d.fit(margins)
    form_of_row = d.rows[:, d.c["form"]].astype(int)
    truth_of_form = np.bincount(d.truth[:, d.tc["form"]].astype(int)[d.truth_fold >= 0], minlength=len(d.forms))

    def run(shift):
        """Accepted and right boxes per form with the margins shifted by `shift` (the fit unchanged)."""
        accepted, ok = d.accept(margins + shift, fitted)
        return np.bincount(form_of_row[accepted], minlength=len(d.forms)), np.bincount(form_of_row[accepted & ok], minlength=len(d.forms))

    def best_offsets(results):
        """Per form, the offset of the best F1; on a tie the one that accepts fewest boxes, then the one nearest 0 (of ±x, -x)."""
        return np.array(
            [max(OFFSETS, key=lambda x: (2 * results[x][1][f] / max(1, results[x][0][f] + truth_of_form[f]), -results[x][0][f], -abs(x))) for f in range(len(d.forms))]
        )

    def report(name, accepted, right):
        a, m = int(accepted.sum()), int(right.sum())
        p, r = m / max(1, a), m / d.real_truth
        print(f"{name}: {a} accepted, {m} right: precision {p:.3f}, recall {r:.3f}, F1 {2 * p * r / max(1e-9, p + r):.3f}", flush=True)

    results = {x: run(np.full(len(margins), float(x))) for x in OFFSETS}
    report("as detected (offset 0)", *results[0])
    chosen = best_offsets(results)
    report("the best offset per form", sum(results[x][0] * (chosen == x) for x in OFFSETS), sum(results[x][1] * (chosen == x) for x in OFFSETS))
    shift = np.zeros(len(margins))
    for kind in np.unique(d.kind):
        own = d.kind == kind
        results = {}
        for x in OFFSETS:
            trial = shift.copy()
            trial[own] += x
            results[x] = run(trial)
        shift[own] += best_offsets(results)[form_of_row[own]]
    report("the best offset per form and proposal kind (one pass over the kinds)", *run(shift))


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what not in ("misses", "calibration", "trees", "oracle"):
        sys.exit(__doc__)
    counts = []
    if what == "trees":
        try:
            counts = [int(a) for a in sys.argv[2:]] or [100, 150, 200]
        except ValueError:
            sys.exit("trees: the counts must be whole numbers of trees")
        # (XGBoost reads an iteration range ending at 0 as every tree.)
        if min(counts) < 1:
            sys.exit("trees: the counts must be 1 or more")
    d = Data()
    if what == "misses":
        misses(d)
    elif what == "calibration":
        calibration(d)
    elif what == "oracle":
        oracle(d)
    else:
        trees(d, counts)

if __name__ == "__main__":
    main()
