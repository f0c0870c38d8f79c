"""
Trains the learned layout detector from the export of scripts/detect/export.ts, cross-validated
by repository, and writes the committed model (src/detect/model/layout-model.json) and the fold
models (.cache/detect/folds/, git-ignored) that bench/detect.ts scores each form with.

What it does, deterministically (fixed seeds, 2 threads, no random split):
1. Folds: whole repositories, k = 5, balanced by truth boxes (largest repositories first, each to
   the fold with the fewest boxes so far, ties by a hash of the repository's name). The synthetic
   pages (scripts/detect/synthetic.ts) are in no fold: every model trains on them, and nothing is
   scored, calibrated or thresholded on them.
2. For each fold: a gradient-boosted tree model (binary:logistic: is this proposal a field, IoU >= 0.5
   with a truth box) and a class model (multi:softprob: text, checkbox or signature, trained on the
   proposals that are fields), both trained on the other folds only. Their out-of-fold scores are
   the scores of forms no model saw. Before the field model, its training rows are scored blind
   (each row by a model trained on neither fold k nor the row's own fold: 4 inner models a fold,
   10 in all since the model blind to k and j serves both), and the far negatives those models
   are surest of get weight 0 (`noise_weights`). And a placement model (reg:logistic: the best
   IoU of a proposal near a truth box), trained on the other folds.
   Then the second field model (SECOND_FLOOR, SECOND_SCORED): for fold k, trained on the other
   folds' proposals that the inner models blind to k and to their own fold score at SECOND_FLOOR
   or more, on their features and their neighbours' scores from those inner models
   (src/detect/neighbours.ts, run through scripts/detect/neighbours.ts); it scores fold k's
   proposals that fold k's first model scores at SECOND_SCORED or more (its early cuts applied, as
   detection applies them), on the neighbours' scores of that model. Its margin is what the steps
   below call the field margin.
3. Non-maximum suppression on the out-of-fold scores, page by page; a kept box is right when it
   takes a truth box (IoU >= 0.5) no box kept before it took. Suppression goes by field margin +
   PLACEMENT_WEIGHT x placement margin: for calibration and thresholds over every box above the
   floor; for the figures, as src/detect/model.ts does it, among the boxes that reach the threshold.
4. Calibration: an isotonic map from a box's score to the share of such boxes that are right.
   Fold k's map is fitted on the kept boxes of the other folds (never on fold k), and so is its
   acceptance threshold (the calibrated probability that maximises F1 there).
5. The final model: trained on everything (its far negatives weighted by the mean of the inner
   models' blind scores), its second model on the real forms' proposals with the neighbours'
   scores of the out-of-fold first margins, its calibration and threshold from all out-of-fold
   boxes; its class and placement models trained on everything too. The first model's early cuts
   stop no proposal that reaches SECOND_SCORED, out of fold or on the model's own training rows.

Run with Debian's python (python3-xgboost, python3-sklearn):
  /usr/bin/python3 scripts/detect/train.py
"""
import hashlib
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import xgboost as xgb
    from sklearn.isotonic import IsotonicRegression
except ImportError as error:  # pragma: no cover - a message for the person running it
    sys.exit(
        f"train.py needs numpy, xgboost and scikit-learn ({error}). On Debian/Ubuntu: "
        "sudo apt-get install python3-xgboost python3-sklearn, and run it with /usr/bin/python3."
    )

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXPORT = os.path.join(ROOT, ".cache", "detect", "export")
FOLDS_DIR = os.path.join(ROOT, ".cache", "detect", "folds")
MODEL = os.path.join(ROOT, "src", "detect", "model", "layout-model.json")

K = 5
# The repository of synthetic.ts's pages: training only (fold -1).
SYNTHETIC_REPO = "synthetic"
CLASSES = ["text", "checkbox", "signature"]
# Tree parameters: fixed, usual values for some hundred thousand rows (docs/decisions.md); nothing
# is tuned on a held-out fold.
FIELD_PARAMS = {
    "objective": "binary:logistic",
    "eval_metric": "logloss",
    "tree_method": "hist",
    "max_depth": 7,
    "eta": 0.1,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "min_child_weight": 3,
    "lambda": 2.0,
    "max_bin": 128,
    "nthread": 2,
    "seed": 7,
    "base_score": 0.5,
}
FIELD_ROUNDS = 200
# Proposals far from every truth box are many and easy: one in this many is trained on.
NEGATIVE_SHARE = 4
# "Far from every truth box": best IoU under this.
FAR_IOU = 0.05
# Of the far negatives, the share that models blind to their repository rate highest: probably
# printed fields the form's author did not make fillable, trained with weight 0. Chosen on the
# out-of-fold F1 (1, 3 and 5 % on seed 7; 2, 3 and 4.5 % on seeds 7-10: bench/README.md), one value
# for all folds.
NOISE_SHARE = 0.03
CLASS_PARAMS = {
    "objective": "multi:softprob",
    "num_class": len(CLASSES),
    "eval_metric": "mlogloss",
    "tree_method": "hist",
    "max_depth": 5,
    "eta": 0.15,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "min_child_weight": 2,
    "nthread": 2,
    "seed": 7,
    "base_score": 0.5,
}
CLASS_ROUNDS = 80
# The placement model: how well a proposal fits the field it overlaps (its IoU with the truth box it
# overlaps most, a regression in 0..1), trained on the proposals near a truth box (IoU FAR_IOU or
# more). Among the boxes that reach the threshold, suppression goes by the field margin plus
# PLACEMENT_WEIGHT times the placement margin, so that of two placements of one field the tighter
# one is kept (bench/README.md, "Suppression by placement"). Acceptance is the field model's: its
# margin, calibrated, against the threshold; the calibration is fitted on the boxes that
# suppression keeps in this order (bench/README.md, "Calibration on the order of suppression").
PLACEMENT_PARAMS = {
    "objective": "reg:logistic",
    "eval_metric": "rmse",
    "tree_method": "hist",
    "max_depth": 6,
    "eta": 0.1,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "min_child_weight": 3,
    "max_bin": 128,
    "nthread": 2,
    "seed": 7,
    "base_score": 0.5,
}
PLACEMENT_ROUNDS = 120
# Chosen on the out-of-fold F1 of the model before (weights 0.5 to 100 compared, flat from 2 to 5):
# bench/README.md.
PLACEMENT_WEIGHT = 2.0
# Non-maximum suppression: a box is dropped when it overlaps an accepted one by IoU >= NMS_IOU, or
# when at least NMS_CONTAIN of it lies inside an accepted box of its class. 0.2 rather than 0.3:
# +0.0036 and +0.0037 out-of-fold F1 with the field models of seeds 7 and 8 of the model before
# (0.1 to 0.5 and NMS_CONTAIN 0.5 to 1 compared on the same scores: bench/README.md); two placements
# of one field that overlap by 0.2 to 0.3 were both kept, and one of them was wrong.
NMS_IOU = 0.2
NMS_CONTAIN = 0.7
# Weighted box fusion after suppression (src/detect/model.ts, `fuse`): each accepted box becomes the
# mean of the boxes at or above the threshold that overlap it by IoU >= FUSE_IOU (itself included),
# weighted by their calibrated probability. FUSE_IOU is the match IoU: the boxes that could each
# be the field. Acceptance, calibration and thresholds are fitted before it (on the boxes as
# proposed) and do not change; +0.008 out-of-fold F1, every fold up (bench/README.md, "Accepted
# boxes fused with their overlapping placements").
FUSE_IOU = 0.5
# (model.ts refuses a FUSE_IOU between 0 and NMS_IOU: two accepted boxes would be fused together.)
assert FUSE_IOU == 0 or FUSE_IOU >= NMS_IOU
# Boxes scored under this raw probability are never fields: left out of suppression and calibration.
FLOOR = 0.02
MATCH_IOU = 0.5
# The field models' early cuts (src/detect/model.ts, `margins`): a proposal whose margin after the
# first `after` trees (each of CUTS_AFTER) is under the model's cut there is not walked through
# the others; it cannot become a field. Each cut (`early_cuts`) is CUT_SAFETY under the lowest
# partial margin there of the rows the model must not stop (the first model: those whose whole
# first margin reaches SECOND_SCORED, which the second model scores; the second model: the boxes
# whose calibrated probability reaches the threshold): out of fold (each scored by the fold model
# blind to it; for a fold model, the other folds' only) and among the model's own training rows
# (so that the model gives the same fields with and without the cuts on every page it was
# trained on). train.py prints the share of proposals each cut stops out of fold.
CUTS_AFTER = (50, 75, 100, 125, 150)
CUT_SAFETY = 0.5
# The second field model (src/detect/neighbours.ts; stacking, or auto-context): the proposals the
# first field model scores at SECOND_SCORED or more are scored again on their features and on how
# the first model scored the proposals around them (the neighbours' scores: of the proposals it
# scores at SECOND_FLOOR or more, FLOOR as a margin). It is trained on the proposals at
# SECOND_FLOOR or more, and their neighbours' scores come from first scores blind to their
# repository (`inner_margins`: for fold k's model, the inner model blind to k and to the row's
# fold; for the final model, the out-of-fold scores), as the rows it scores at run time get theirs
# from a model that never saw their form. Its margin is the one calibrated, thresholded and
# ranked. Trained and scored from SECOND_FLOOR, it gained +0.009 and +0.004 F1 over the first
# model alone (seeds 7 and 8, bench/README.md); trained and scored from -2.5 or -2.2, nothing.
# Scored only from SECOND_SCORED, with the first model's cuts fitted to keep what reaches it, the
# cuts stop far more proposals and the F1 is the same: trained as here, scored from SECOND_FLOOR,
# -2.5 and -1.5, F1 0.734 each time out of fold, detection 1.71, 1.58 and 1.43 x pdf.js alone.
SECOND_FLOOR = round(float(np.log(FLOOR / (1 - FLOOR))), 6)
SECOND_SCORED = -1.5
SECOND_ROUNDS = FIELD_ROUNDS
NEIGHBOURS_SCRIPT = os.path.join(ROOT, "scripts", "detect", "neighbours.ts")


def load():
    with open(os.path.join(EXPORT, "header.json")) as f:
        header = json.load(f)
    n_feat = len(header["features"])
    features = np.fromfile(os.path.join(EXPORT, "features.f32"), dtype="<f4").reshape(-1, n_feat)
    rows = np.fromfile(os.path.join(EXPORT, "rows.f64"), dtype="<f8").reshape(-1, len(header["rowColumns"]))
    truth = np.fromfile(os.path.join(EXPORT, "truth.f64"), dtype="<f8").reshape(-1, len(header["truthColumns"]))
    if len(features) != len(rows):
        sys.exit("export: features and rows differ in length; run the export again")
    return header, features, rows, truth


def column(header, name, which="rowColumns"):
    return header[which].index(name)


def assign_folds(header, truth):
    """Repositories to folds: balanced by truth boxes, stable (no random numbers)."""
    forms = header["forms"]
    boxes = {}
    for form in forms:
        if form["repo"] != SYNTHETIC_REPO:
            boxes.setdefault(form["repo"], 0)
    form_col = column(header, "form", "truthColumns")
    for f in truth[:, form_col].astype(int):
        if forms[f]["repo"] != SYNTHETIC_REPO:
            boxes[forms[f]["repo"]] += 1
    digest = lambda repo: hashlib.sha256(repo.encode()).hexdigest()
    order = sorted(boxes, key=lambda r: (-boxes[r], digest(r)))
    totals = [0] * K
    fold_of = {}
    for repo in order:
        k = min(range(K), key=lambda i: (totals[i], i))
        fold_of[repo] = k
        totals[k] += boxes[repo]
    return fold_of, totals


def iou_matrix(a, b):
    """IoU of every box of a (n x 4: x, y, w, h) with every box of b."""
    ax2 = a[:, 0] + a[:, 2]
    ay2 = a[:, 1] + a[:, 3]
    bx2 = b[:, 0] + b[:, 2]
    by2 = b[:, 1] + b[:, 3]
    w = np.clip(np.minimum(ax2[:, None], bx2[None, :]) - np.maximum(a[:, 0][:, None], b[:, 0][None, :]), 0, None)
    h = np.clip(np.minimum(ay2[:, None], by2[None, :]) - np.maximum(a[:, 1][:, None], b[:, 1][None, :]), 0, None)
    inter = w * h
    area_a = a[:, 2] * a[:, 3]
    area_b = b[:, 2] * b[:, 3]
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0), inter


def suppress(boxes, margins, classes):
    """Greedy NMS by score (src/detect/model.ts): indices kept, best first."""
    order = sorted(range(len(margins)), key=lambda i: (-margins[i], i))
    ious, inter = iou_matrix(boxes, boxes)
    area = boxes[:, 2] * boxes[:, 3]
    kept = []
    for i in order:
        clash = False
        for j in kept:
            if ious[i, j] >= NMS_IOU or (classes[i] == classes[j] and inter[i, j] >= NMS_CONTAIN * area[i]):
                clash = True
                break
        if not clash:
            kept.append(i)
    return kept


def fuse(kept_boxes, boxes, weights):
    """Each kept box (n x 4: x, y, w, h) as the weighted mean of `boxes` over it by IoU >= FUSE_IOU (model.ts, `fuse`)."""
    ious, inter = iou_matrix(kept_boxes, boxes)
    over = (ious >= FUSE_IOU) & (inter > 0)
    near = np.where(over, weights[None, :], 0.0)
    total = near.sum(axis=1)
    edges = np.stack([boxes[:, 0], boxes[:, 1], boxes[:, 0] + boxes[:, 2], boxes[:, 1] + boxes[:, 3]], axis=1)
    mean = (near @ edges) / np.where(total > 0, total, 1.0)[:, None]
    fused = np.stack([mean[:, 0], mean[:, 1], mean[:, 2] - mean[:, 0], mean[:, 3] - mean[:, 1]], axis=1)
    # A box alone (`boxes` holds it too) stays exactly where it is.
    return np.where(((over.sum(axis=1) >= 2) & (total > 0))[:, None], fused, kept_boxes)


def page_outcomes(header, rows, truth, margins, classes, among=None, rank=None, fused_by=None):
    """
    For every row: kept by NMS and right (takes a truth box no box before it took). The rows that
    take part are those of `among` (a mask; by default every row above the floor), in the order of
    `rank` (by default `margins`; src/detect/model.ts: field and placement margins). With
    `fused_by` (a weight per row: the calibrated probabilities) and FUSE_IOU above 0, each kept box
    is matched where `fuse` moves it among the rows that take part: as detection does it when
    `among` is the rows at or above their threshold.
    """
    assert fused_by is None or among is not None, "fusion pools the rows of `among`: give it"
    c = {name: column(header, name) for name in ("form", "page", "x", "y", "w", "h")}
    tc = {name: column(header, name, "truthColumns") for name in ("form", "page", "x", "y", "w", "h")}
    kept = np.zeros(len(rows), dtype=bool)
    right = np.zeros(len(rows), dtype=bool)
    floor = np.log(FLOOR / (1 - FLOOR))
    truth_by_page = {}
    for t in range(len(truth)):
        truth_by_page.setdefault((int(truth[t, tc["form"]]), int(truth[t, tc["page"]])), []).append(t)
    page_key = rows[:, c["form"]] * 10000 + rows[:, c["page"]]
    order = np.argsort(page_key, kind="stable")
    bounds = np.flatnonzero(np.diff(page_key[order])) + 1
    for group in np.split(order, bounds):
        group = group[margins[group] >= floor] if among is None else group[among[group]]
        if len(group) == 0:
            continue
        boxes = rows[group][:, [c["x"], c["y"], c["w"], c["h"]]]
        keep = suppress(boxes, (margins if rank is None else rank)[group], classes[group])
        kept[group[keep]] = True
        key = (int(rows[group[0], c["form"]]), int(rows[group[0], c["page"]]))
        tids = truth_by_page.get(key, [])
        if not tids:
            continue
        tboxes = truth[tids][:, [tc["x"], tc["y"], tc["w"], tc["h"]]]
        placed = boxes[keep] if fused_by is None or FUSE_IOU <= 0 else fuse(boxes[keep], boxes, fused_by[group])
        ious, _ = iou_matrix(placed, tboxes)
        taken = np.zeros(len(tids), dtype=bool)
        for n, i in enumerate(keep):
            candidates = np.where(~taken & (ious[n] >= MATCH_IOU), ious[n], -1)
            best = int(np.argmax(candidates))
            if candidates[best] >= MATCH_IOU:
                taken[best] = True
                right[group[i]] = True
    return kept, right


def calibrate(margins, right):
    """Isotonic map from score to probability of being right, as a compact table."""
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(margins, right.astype(float))
    xs = np.round(iso.X_thresholds_, 4)
    ys = np.round(iso.y_thresholds_, 4)
    table_x, table_y = [], []
    for x, y in zip(xs.tolist(), ys.tolist()):
        if table_x and x == table_x[-1]:
            table_y[-1] = y
            continue
        # Interior points of a flat run add nothing to linear interpolation.
        if len(table_y) >= 2 and table_y[-1] == y and table_y[-2] == y:
            table_x[-1] = x
            continue
        table_x.append(x)
        table_y.append(y)
    return {"x": table_x, "y": table_y}


def apply_calibration(table, margins):
    return np.interp(margins, table["x"], table["y"])


def best_threshold(probs, right, truth_count):
    """The calibrated probability at or above which accepting boxes gives the best F1."""
    best = (0.0, 0.5)
    for t in np.round(np.arange(0.2, 0.81, 0.01), 2):
        accepted = probs >= t
        detected = int(accepted.sum())
        matched = int((accepted & right).sum())
        if detected == 0:
            continue
        p, r = matched / detected, matched / truth_count
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        if f1 > best[0] + 1e-9:
            best = (f1, float(t))
    return best[1]


def f32(v):
    """The shortest decimal that reads back as the same float32 (XGBoost compares in float32)."""
    return float(np.format_float_positional(np.float32(v), unique=True, trim="-"))


def export_trees(booster):
    model = json.loads(booster.save_raw("json"))
    learner = model["learner"]
    base = float(learner["learner_model_param"]["base_score"])
    trees = []
    for tree in learner["gradient_booster"]["model"]["trees"]:
        left = tree["left_children"]
        feature, value = [], []
        for n in range(len(left)):
            if left[n] == -1:
                feature.append(-1)
                value.append(round(float(tree["split_conditions"][n]), 6))
            else:
                feature.append(int(tree["split_indices"][n]))
                value.append(f32(tree["split_conditions"][n]))
        trees.append(
            {
                "f": feature,
                "v": value,
                "l": [int(n) for n in left],
                "r": [int(n) for n in tree["right_children"]],
                "d": [int(n) for n in tree["default_left"]],
            }
        )
    info = [int(n) for n in learner["gradient_booster"]["model"]["tree_info"]]
    return base, trees, info


def training_rows(best_iou):
    """
    Rows the field model is trained on, and their weights: every proposal near a truth box (IoU
    FAR_IOU or more, the hard cases), and one in NEGATIVE_SHARE of the others, weighted up to stand
    for the rest (by position in the export, so that every run picks the same).
    """
    near = best_iou >= FAR_IOU
    picked = near | (np.arange(len(best_iou)) % NEGATIVE_SHARE == 0)
    weights = np.where(near, 1.0, float(NEGATIVE_SHARE))
    # A field's proposals weighted by their IoU with it: of two placements of one field, the
    # tighter one is the better example (bench/README.md, "White boxes on shaded bands").
    weights = np.where(best_iou >= MATCH_IOU, best_iou, weights)
    return picked, weights


def train_field(X, best_iou, noise=None):
    """Is a proposal a field: IoU >= 0.5 with a truth box. `noise`: per-row weights (noise_weights)."""
    picked, weights = training_rows(best_iou)
    if noise is not None:
        weights = weights * noise
    data = xgb.DMatrix(X[picked], label=(best_iou[picked] >= MATCH_IOU).astype(float), weight=weights[picked], nthread=2)
    return xgb.train(FIELD_PARAMS, data, FIELD_ROUNDS)


def inner_margins(X, best_iou, row_fold, started=None):
    """
    For each fold k, the rows of every other fold j, each scored by a field model trained on
    neither fold k nor fold j (`inner[k]`, NaN on fold k's rows and on the synthetic pages):
    scores blind to the row's repository that fold k's model may use, since they never saw fold k
    either. The model blind to k and j is the model blind to j and k (the same rows, the same
    seed), so each of the K (K - 1) / 2 pairs is trained once and scores both of its folds.
    """
    inner = np.full((K, len(X)), np.nan)
    for k in range(K):
        for j in range(k + 1, K):
            train = (row_fold != k) & (row_fold != j)
            model = train_field(X[train], best_iou[train])
            for scored, blind_to in ((j, k), (k, j)):
                test = row_fold == scored
                inner[blind_to, test] = model.predict(xgb.DMatrix(X[test], nthread=2), output_margin=True)
            if started is not None:
                print(f"folds {k} and {j}: an inner model blind to both scored their rows, {time.time() - started:.0f} s")
    return inner


def noise_weights(scores, best_iou, rows):
    """
    1 for every row, but 0 for the NOISE_SHARE of the far negatives among `rows` that `scores`
    (blind to their repository; NaN on the synthetic pages, which are left alone) rate highest.
    Many false boxes lie on forms whose authors made only some of the printed fields fillable;
    trained as negatives, those rows teach that a well-printed field is often not one
    (bench/README.md, "Training rows that are probably unlabelled fields").
    """
    far = rows & (best_iou < FAR_IOU) & np.isfinite(scores)
    weights = np.ones(len(scores))
    if far.any():
        cut = np.quantile(scores[far], 1 - NOISE_SHARE)
        weights[far & (scores >= cut)] = 0.0
    return weights


def train_placement(X, best_iou):
    """How well a proposal near a truth box fits it: its best IoU (0..1), on the rows near one."""
    near = best_iou >= FAR_IOU
    data = xgb.DMatrix(X[near], label=np.clip(best_iou[near], 0.0, 1.0), nthread=2)
    return xgb.train(PLACEMENT_PARAMS, data, PLACEMENT_ROUNDS)


def train_class(X, y):
    return xgb.train(CLASS_PARAMS, xgb.DMatrix(X, label=y, nthread=2), CLASS_ROUNDS)


def early_cuts(model, data, reaches, blind_partial):
    """
    A field model's cuts, one for each of CUTS_AFTER: CUT_SAFETY under the lowest margin after
    that many trees of a row that `reaches` (a test of whole margins: for the first model, those
    at SECOND_SCORED or more, which the second model scores; for the second, those whose calibrated
    probability reaches the threshold), among its training rows `data` (a DMatrix, scored by the
    model itself) and `blind_partial` (a row per cut): the partial margins of the out-of-fold rows
    that reached, each scored by its own fold's model (for fold k's model, the other folds' rows;
    for the final model, all of them: the fold models stand in for it on rows it was trained on).
    """
    reach = reaches(model.predict(data, output_margin=True))
    cuts = []
    for j, after in enumerate(CUTS_AFTER):
        mine = model.predict(data, output_margin=True, iteration_range=(0, after))[reach]
        lowest = float(min(mine.min(initial=np.inf), blind_partial[j].min(initial=np.inf)))
        if not np.isfinite(lowest):
            sys.exit("train.py: no row reaches what the early cuts must not stop, so they have nothing to stay under")
        cuts.append(lowest - CUT_SAFETY)
    return cuts


def neighbour_features(margin_sets):
    """
    The neighbours' scores (src/detect/neighbours.ts, run by scripts/detect/neighbours.ts: the code
    detection runs) of every row for each set of first margins (NaN: no margin), and their names.
    A row's are NaN when its margin is under SECOND_FLOOR.
    """
    work = os.path.join(FOLDS_DIR, "neighbours")
    os.makedirs(work, exist_ok=True)
    args = []
    for i, m in enumerate(margin_sets):
        src, out = os.path.join(work, f"margins-{i}.f64"), os.path.join(work, f"neighbours-{i}.f32")
        np.asarray(m, dtype="<f8").tofile(src)
        args += [src, out]
    node = os.environ.get("NODE", "node")
    run = subprocess.run([node, "--import", "tsx", NEIGHBOURS_SCRIPT, repr(SECOND_FLOOR)] + args, cwd=ROOT, check=True, capture_output=True, text=True)
    names = json.loads(run.stdout)
    sets = []
    for i in range(len(margin_sets)):
        out = os.path.join(work, f"neighbours-{i}.f32")
        sets.append(np.fromfile(out, dtype="<f4").reshape(len(margin_sets[i]), len(names)))
        os.remove(out)
        os.remove(os.path.join(work, f"margins-{i}.f64"))
    return names, sets


def train_second(X, around, best_iou, rows, noise):
    """The second field model, on `rows` (first margin at SECOND_FLOOR or more, blind): is a proposal a field."""
    weights = np.where(best_iou >= MATCH_IOU, best_iou, 1.0) * noise
    data = xgb.DMatrix(np.hstack([X[rows], around[rows]]), label=(best_iou[rows] >= MATCH_IOU).astype(float), weight=weights[rows], nthread=2)
    return xgb.train(FIELD_PARAMS, data, SECOND_ROUNDS)


def cuts_json(cuts):
    """A field model's early cuts as the model file holds them: one for each of CUTS_AFTER."""
    return [{"after": after, "margin": round(float(cut), 6)} for after, cut in zip(CUTS_AFTER, cuts)]


def model_json(header, field, second, neighbour_names, classes, placement, calibration, threshold, cuts, second_cuts, trained_on):
    base, trees, _ = export_trees(field)
    sbase, strees, _ = export_trees(second)
    cbase, ctrees, cinfo = export_trees(classes)
    pbase, ptrees, _ = export_trees(placement)
    return {
        "version": 1,
        "features": header["features"],
        "field": {"baseMargin": round(float(np.log(base / (1 - base))), 6), "trees": trees},
        "classes": CLASSES,
        "class": {"baseMargin": round(cbase, 6), "treeClass": cinfo, "trees": ctrees},
        "calibration": calibration,
        "threshold": threshold,
        "placement": {"baseMargin": round(float(np.log(pbase / (1 - pbase))), 6), "trees": ptrees},
        "nms": {"iou": NMS_IOU, "contain": NMS_CONTAIN, "placementWeight": PLACEMENT_WEIGHT, "fuseIou": FUSE_IOU},
        "cuts": cuts_json(cuts),
        "second": {
            "floor": SECOND_FLOOR,
            "scoredFrom": SECOND_SCORED,
            "names": neighbour_names,
            "field": {"baseMargin": round(float(np.log(sbase / (1 - sbase))), 6), "trees": strees},
            "cuts": cuts_json(second_cuts),
        },
        "floor": FLOOR,
        "trainedOn": trained_on,
    }


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, separators=(",", ":"), sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def main():
    started = time.time()
    header, X, rows, truth = load()
    forms = header["forms"]
    form_col = column(header, "form")
    label = rows[:, column(header, "label")].astype(int)
    best_iou = rows[:, column(header, "bestIou")]
    truth_cls = rows[:, column(header, "truthCls")].astype(int)
    fold_of, totals = assign_folds(header, truth)
    # Fold -1: the synthetic pages, trained on by every model and never scored.
    form_fold = np.array([fold_of.get(f["repo"], -1) for f in forms])
    row_fold = form_fold[rows[:, form_col].astype(int)]
    truth_fold = form_fold[truth[:, column(header, "form", "truthColumns")].astype(int)]
    real_rows = row_fold >= 0
    real_truth = int((truth_fold >= 0).sum())
    print(f"{len(forms)} forms ({int((form_fold < 0).sum())} synthetic), {len(fold_of)} repositories, {len(rows)} proposals ({label.sum()} fields), {len(truth)} truth boxes")
    print(f"folds (truth boxes): {totals}")

    # The first field model's out-of-fold margins (NaN on the synthetic rows, which no model scores).
    first = np.full(len(rows), np.nan)
    # Out-of-fold margins of the first model after its first trees, for each early cut (CUTS_AFTER).
    partial = np.zeros((len(CUTS_AFTER), len(rows)))
    class_probs = np.zeros((len(rows), len(CLASSES)))
    # Out-of-fold placement margins.
    place = np.zeros(len(rows))
    fold_models = []
    inner = inner_margins(X, best_iou, row_fold, started)
    noises = []
    for k in range(K):
        train = row_fold != k
        noise = noise_weights(inner[k], best_iou, train)
        noises.append(noise)
        field = train_field(X[train], best_iou[train], noise[train])
        positive = train & (label == 1)
        classes = train_class(X[positive], truth_cls[positive])
        test = ~train
        held_out = xgb.DMatrix(X[test], nthread=2)
        first[test] = field.predict(held_out, output_margin=True)
        for j, after in enumerate(CUTS_AFTER):
            partial[j, test] = field.predict(held_out, output_margin=True, iteration_range=(0, after))
        class_probs[test] = classes.predict(held_out)
        placement = train_placement(X[train], best_iou[train])
        place[test] = placement.predict(held_out, output_margin=True)
        fold_models.append([field, None, classes, placement])
        print(f"fold {k}: trained on {int(train.sum())} proposals, {time.time() - started:.0f} s")

    # The first model's early cuts, from the proposals at or above SECOND_SCORED of the other folds;
    # `seen`: the out-of-fold first margins as detection sees them, -inf where a cut stops one.
    reached = np.nan_to_num(first, nan=-np.inf) >= SECOND_SCORED
    reaches_scored = lambda m: m >= SECOND_SCORED
    cuts = [early_cuts(fold_models[k][0], xgb.DMatrix(X[row_fold != k], nthread=2), reaches_scored, partial[:, reached & (row_fold != k)]) for k in range(K)]
    first_cut = real_rows & np.any(partial < np.array([[c[j] for c in cuts] for j in range(len(CUTS_AFTER))])[:, np.maximum(row_fold, 0)], axis=0)
    seen = np.where(first_cut, -np.inf, first)

    # The second field model: fold k's trained on the neighbours' scores of inner[k] (blind to k and
    # to each row's fold), scoring fold k's rows on those of the out-of-fold first margins.
    # (inner[k] has no early cuts, where `seen` has fold k's. Inner models with cuts of their own
    # gave no better F1 out of fold: bench/README.md, "More tries on the second model".)
    neighbour_names, scores_around = neighbour_features([inner[k] for k in range(K)] + [seen])
    blind_around = scores_around[K]
    scored_rows = np.nan_to_num(seen, nan=-np.inf) >= SECOND_SCORED
    margins = np.full(len(rows), -np.inf)
    # Out-of-fold margins of the second model after its first trees, for each of its early cuts.
    partial_second = np.full((len(CUTS_AFTER), len(rows)), -np.inf)
    second_rows = []
    for k in range(K):
        rows_k = real_rows & (row_fold != k) & (np.nan_to_num(inner[k], nan=-np.inf) >= SECOND_FLOOR)
        second = train_second(X, scores_around[k], best_iou, rows_k, noises[k])
        test = (row_fold == k) & scored_rows
        held_out = xgb.DMatrix(np.hstack([X[test], blind_around[test]]), nthread=2)
        margins[test] = second.predict(held_out, output_margin=True)
        for j, after in enumerate(CUTS_AFTER):
            partial_second[j, test] = second.predict(held_out, output_margin=True, iteration_range=(0, after))
        fold_models[k][1] = second
        # Its training rows, for its early cuts.
        second_rows.append(xgb.DMatrix(np.hstack([X[rows_k], scores_around[k][rows_k]]), nthread=2))
        print(f"fold {k}: second model trained on {int(rows_k.sum())} proposals, {time.time() - started:.0f} s")
    del scores_around

    predicted_class = np.argmax(class_probs, axis=1)
    # Calibration and thresholds are fitted on the boxes that suppression keeps in the order
    # detection uses (field and placement margins), over every box above the floor.
    rank = margins + PLACEMENT_WEIGHT * place
    kept, right = page_outcomes(header, rows, truth, margins, predicted_class, rank=rank)
    synthetic_forms = int((form_fold < 0).sum())
    trained_on = lambda ks: {
        "forms": int(sum(1 for f in form_fold if f in ks)),
        "syntheticForms": synthetic_forms,
        "repositories": sorted(r for r, k in fold_of.items() if k in ks),
    }
    os.makedirs(FOLDS_DIR, exist_ok=True)
    summary = []
    calibrations = []
    for k in range(K):
        others = kept & real_rows & (row_fold != k)
        calibrations.append(calibrate(margins[others], right[others]))
        summary.append(best_threshold(apply_calibration(calibrations[k], margins[others]), right[others], int(((truth_fold != k) & (truth_fold >= 0)).sum())))

    # Out-of-fold figures before the TypeScript bench (which is the measure that counts).
    probs = np.zeros(len(rows))
    for k in range(K):
        probs[row_fold == k] = apply_calibration(calibrations[k], margins[row_fold == k])
    # Synthetic rows (fold -1) have no threshold: never accepted.
    thresholds = np.where(real_rows, np.array(summary)[np.maximum(row_fold, 0)], np.inf)
    # For comparison, the same thresholds with suppression by the field margin alone.
    field_kept, field_right = page_outcomes(header, rows, truth, margins, predicted_class)
    accepted = field_kept & real_rows & (probs >= thresholds)
    matched = int((accepted & field_right).sum())
    print(f"out of fold, the same thresholds, suppressed by the field margin alone: {int(accepted.sum())} accepted, {matched} right: precision {matched / max(1, accepted.sum()):.3f}, recall {matched / real_truth:.3f}")
    # As detection does it: the boxes that reach their threshold, suppressed by field and placement margins.
    reaching = real_rows & (probs >= thresholds) & (margins > -np.inf)
    accepted, right_ranked = page_outcomes(header, rows, truth, margins, predicted_class, among=reaching, rank=rank)
    matched = int((accepted & right_ranked).sum())
    print(f"out of fold, suppressed by field and placement margins: {int(accepted.sum())} accepted, {matched} right: precision {matched / max(1, accepted.sum()):.3f}, recall {matched / real_truth:.3f}")
    # And with the accepted boxes fused (FUSE_IOU): the same boxes, moved.
    _, right_fused = page_outcomes(header, rows, truth, margins, predicted_class, among=reaching, rank=rank, fused_by=probs)
    matched = int((accepted & right_fused).sum())
    print(f"out of fold, the same boxes fused with their placements: {int(accepted.sum())} accepted, {matched} right: precision {matched / max(1, accepted.sum()):.3f}, recall {matched / real_truth:.3f}")

    # The second model's early cuts: from the boxes at or above their threshold (suppressed or not).
    second_cuts = [
        early_cuts(fold_models[k][1], second_rows[k], lambda m, k=k: apply_calibration(calibrations[k], m) >= summary[k], partial_second[:, reaching & (row_fold != k)])
        for k in range(K)
    ]
    del second_rows
    for k, (field, second, classes, placement) in enumerate(fold_models):
        info = trained_on({i for i in range(K) if i != k})
        write_json(os.path.join(FOLDS_DIR, f"fold-{k}.json"), model_json(header, field, second, neighbour_names, classes, placement, calibrations[k], summary[k], cuts[k], second_cuts[k], {"fold": k, "forms": info["forms"], "syntheticForms": synthetic_forms}))
    write_json(os.path.join(FOLDS_DIR, "folds.json"), {"k": K, "repositories": dict(sorted(fold_of.items())), "thresholds": summary, "cuts": cuts, "secondCuts": second_cuts})
    # Where each proposal stops out of fold: the first cut it is under (a proposal under none goes through every tree).
    for which, fold_cuts, partials, scored, kept_by in (("first", cuts, partial, real_rows, reached), ("second", second_cuts, partial_second, real_rows & scored_rows, reaching)):
        going = scored.copy()
        for j, after in enumerate(CUTS_AFTER):
            row_cut = np.where(real_rows, np.array([c[j] for c in fold_cuts])[np.maximum(row_fold, 0)], -np.inf)
            stopped = going & (partials[j] < row_cut)
            going &= ~stopped
            print(f"{which} model, early cut after {after} trees (margins {', '.join(f'{c[j]:.2f}' for c in fold_cuts)} by fold): {stopped.sum() / max(1, scored.sum()):.1%} of its proposals stop there out of fold; of those it must not stop: {int((stopped & kept_by).sum())} (accepted: {int((stopped & accepted).sum())})")
        print(f"{which} model, early cuts: {going.sum() / max(1, scored.sum()):.1%} of its proposals go through all its trees out of fold")
    # For diagnosis: every proposal's out-of-fold score and outcome.
    # (fold -1: synthetic rows, never scored: their margins, kept and right mean nothing.)
    np.savez(os.path.join(FOLDS_DIR, "oof.npz"), margins=margins, first=first, classes=predicted_class, kept=kept, right=right, probs=probs, fold=row_fold, place=place, accepted=accepted, right_ranked=right_ranked, right_fused=right_fused)

    # The final model: everything; its rows' blind scores are the mean of the inner models' that
    # never saw the row's fold; calibrated and thresholded on all out-of-fold boxes.
    blind = np.full(len(rows), np.nan)  # NaN on the synthetic pages: no inner model scored them
    blind[real_rows] = np.nanmean(inner[:, real_rows], axis=0)  # inner[k] is NaN on fold k
    noise = noise_weights(blind, best_iou, np.ones(len(rows), dtype=bool))
    field = train_field(X, best_iou, noise)
    # (on the rows detection would see at SECOND_FLOOR or more: not stopped by a fold model's cut)
    second = train_second(X, blind_around, best_iou, real_rows & (np.nan_to_num(seen, nan=-np.inf) >= SECOND_FLOOR), noise)
    classes = train_class(X[label == 1], truth_cls[label == 1])
    placement = train_placement(X, best_iou)
    calibration = calibrate(margins[kept & real_rows], right[kept & real_rows])
    threshold = best_threshold(apply_calibration(calibration, margins[kept & real_rows]), right[kept & real_rows], real_truth)
    # Its cuts: from its own rows and every fold's rows that reached SECOND_SCORED (the first
    # model's) or the threshold (the second's), scored blind.
    cuts = early_cuts(field, xgb.DMatrix(X, nthread=2), reaches_scored, partial[:, reached])
    own = real_rows & scored_rows
    second_cuts = early_cuts(second, xgb.DMatrix(np.hstack([X[own], blind_around[own]]), nthread=2), lambda m: apply_calibration(calibration, m) >= threshold, partial_second[:, reaching])
    final = model_json(header, field, second, neighbour_names, classes, placement, calibration, threshold, cuts, second_cuts, {"forms": len(forms) - synthetic_forms, "syntheticForms": synthetic_forms, "repositories": len(fold_of)})
    write_json(MODEL, final)
    print(f"model: {MODEL} ({os.path.getsize(MODEL) / 1e6:.2f} MB), threshold {threshold}, {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
