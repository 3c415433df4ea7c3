"""A muscle fitted to a closed mesh (a sculpted muscle): one or several straight fusiform fibres whose rest shape
best matches the mesh's cross-sections, and the bones their ends attach to.

For a slicing direction ``d`` the mesh is cut into ``SECTIONS`` plane sections between its extremes along ``d``
(:mod:`core.muscle.sections`). With ``k`` fibres each section is split into ``k`` strips of equal width across
its long direction ``e1`` (the direction the sections spread most), and each strip's area moments give a fibre's
centre, area and second moments at that height. Per fibre:

* axis: the straight line through its section centres (area-weighted least squares), from the plane of the
  mesh's first section to that of its last; the sections, cut at an angle ``gamma`` to the fibre, are projected
  onto the fibre's normal plane (area times ``cos gamma``, second moments projected);
* width: the volume law, paper eq. (3), ``w = sqrt(V / (pi l))``, with ``V`` the fibre's share of the mesh's
  volume (divergence theorem) and ``l`` its axis length;
* rest profile: the pair ``(alpha, beta)`` of all 81 whose radii ``w phi(alpha, beta; s)`` (paper eq. 4) are
  closest (least squares) to the sections' equivalent radii ``sqrt(A / pi)`` (an ellipse of eq. 5 has the area
  ``pi (w Phi)^2`` whatever its eccentricity);
* flatness: ``e = sqrt(1 - b^2 / a^2)`` of the sections' ellipse of inertia (``b^2 / a^2`` the ratio of the
  second moments' eigenvalues, area-weighted over the sections at least ``FLAT_SECTIONS`` of the largest), and
  the long axis ``n`` from the same moments.

The slicing direction is tried along each of the two main axes of the solid, then once more along the fibres'
mean direction; the fibre count goes from 1 to ``MAX_FIBRES`` unless given. The fit kept is the one whose surface
lies closest to the mesh: the error is the RMS of ``min_f f_M`` (the fibres' fields, paper eq. 1, about the
distance to their union's surface) over the mesh's vertices, and a count of fibres is taken only if it is more
than ``FIBRE_GAIN`` better than every smaller count (errors under ``ERROR_FLOOR`` of the fit's thickness count as
equal). Plain numpy; the fields by the numba kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validation
from . import sections as _sections
from .profile import SHAPE_RANGE, PHI_NORMALISER, profile_max

SECTIONS = 48
"""Plane sections per fit, evenly spaced between the mesh's extremes (at the midpoints of equal intervals)."""
MAX_FIBRES = 6
"""Largest number of fibres tried when the count is automatic."""
FIBRE_GAIN = 0.4
"""A fit with more fibres is kept only if its error is at least this fraction lower than with fewer."""
ERROR_FLOOR = 0.01
"""Errors below this fraction of the thickest fibre's radius count as equal when choosing the fibre count."""
FLAT_SECTIONS = 0.2
"""Sections with less than this fraction of the largest section's area do not vote on the flatness."""
MAX_ECCENTRICITY = 0.99
"""The largest flatness a muscle takes (``core/validation.py``)."""
BONE_REACH = 0.5
"""A fibre's end may lie at most this many fibre lengths from the nearest bone."""
REFINE_COS = float(np.cos(np.radians(0.5)))
"""The sections are cut again along the fibres' mean direction when it differs from the first by more than 0.5
degrees."""
ERROR_PARTICLES = 4
"""Inner axis points of the straight fibres whose fields measure the error (any count gives the same field)."""


@dataclass(frozen=True)
class FibreFit:
    """One straight fibre fitted to (part of) a mesh, in the mesh's coordinates.

    origin, insertion : (3,) [m]   axis ends (origin at the end with the lower height along the slicing
                                   direction until :func:`attach_to_bones` orders them by bone)
    width : float [m]              rest width ``w`` (volume law, paper eq. 3)
    alpha, beta : int in 1..9      rest profile (paper eq. 4), ``s = 0`` at the origin
    eccentricity : float           rest flatness in [0, 0.99] (paper eq. 5)
    long_axis : (3,) unit          direction of the cross-section's long semi-axis, orthogonal to the axis
    volume : float [m^3]           the fibre's share of the mesh's volume
    profile_error : float [m]      RMS difference of the fitted radii ``w phi`` from the sections' equivalent radii
    """

    origin: np.ndarray
    insertion: np.ndarray
    width: float
    alpha: int
    beta: int
    eccentricity: float
    long_axis: np.ndarray
    volume: float
    profile_error: float

    @property
    def length(self) -> float:
        return float(np.linalg.norm(self.insertion - self.origin))

    @property
    def peak_radius(self) -> float:
        """The fibre's largest equivalent radius ``w max phi`` [m]."""
        return self.width * profile_max(self.alpha, self.beta, self.alpha, self.beta, 0.0)

    def reversed(self) -> "FibreFit":
        """The same fibre from the other end: ends swapped, ``phi(alpha, beta; 1 - s) = phi(beta, alpha; s)``."""
        return FibreFit(self.insertion, self.origin, self.width, self.beta, self.alpha, self.eccentricity,
                        self.long_axis, self.volume, self.profile_error)

    def muscle(self, particles: int = ERROR_PARTICLES, name: str = "fibre"):
        """The fitted fibre as a :class:`core.muscle.primitive.FusiformMuscle` at rest (active shape = rest)."""
        from .primitive import FusiformMuscle, MuscleShape
        shape = MuscleShape(self.alpha, self.beta, self.alpha, self.beta, self.eccentricity, self.eccentricity)
        return FusiformMuscle(self.origin, self.insertion, width=self.width, shape=shape, particles=particles,
                              origin_normal=self.long_axis, insertion_normal=self.long_axis, name=name)


@dataclass(frozen=True)
class MeshFit:
    """The fit of a closed mesh: its fibres, its volume and how far the fitted surface lies from the mesh.

    fibres : tuple of FibreFit
    volume : float [m^3]          the mesh's volume (divergence theorem)
    error_rms, error_max : [m]    RMS and largest ``|min_f f_M|`` over the mesh's vertices
    """

    fibres: tuple
    volume: float
    error_rms: float
    error_max: float

    @property
    def thickness(self) -> float:
        """The thickest fibre's largest equivalent radius [m]."""
        return max(f.peak_radius for f in self.fibres)

    @property
    def relative_error(self) -> float:
        """``error_rms / thickness``."""
        return self.error_rms / self.thickness


def fit_mesh(vertices, faces, fibres: int = 0, name: str = "the mesh") -> MeshFit:
    """Fit straight fusiform fibres to the closed mesh ``vertices (V, 3) [m]``, ``faces (F, 3)`` (triangles,
    consistently oriented). ``fibres``: 0 chooses the count (1 to ``MAX_FIBRES``), else exactly that many.
    Raises ``ValueError`` with a plain sentence for a mesh that is not closed, is made of several pieces or
    encloses no volume."""
    v = validation.points(vertices, f"{name}'s vertices", min_count=4)
    f = np.asarray(faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or (f.size and (f.min() < 0 or f.max() >= len(v))):
        raise ValueError(f"{name}'s faces must be triangles of vertex indices.")
    fibres = int(fibres)
    if not 0 <= fibres <= 16:
        raise ValueError(f"the number of fibres must be 0 (automatic) to 16, got {fibres}.")
    size = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    centred = v - v.mean(axis=0)
    if size == 0.0 or np.linalg.eigvalsh(centred.T @ centred / len(v))[0] < (1e-6 * size) ** 2:
        raise ValueError(f"{name} encloses no volume (it is flat or empty): a muscle needs a closed, solid "
                         f"shape.")
    v, inverse = np.unique(v, axis=0, return_inverse=True)  # split vertices (UV seams, imports) welded
    f = inverse.reshape(-1)[f]
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 2] != f[:, 0])]
    problem = _sections.closed_mesh_problem(f, name)
    if problem:
        raise ValueError(problem)
    pieces = _sections.piece_count(f, len(v))
    if pieces > 1:
        raise ValueError(f"{name} is made of {pieces} separate pieces: separate them (Edit Mode: Mesh > Separate > "
                         f"By Loose Parts) and select them all, for one muscle each.")
    volume, centroid, covariance = _sections.solid_moments(v, f)
    if volume < 0.0:
        f, volume = f[:, ::-1], -volume  # normals all inward: the same solid
    if volume < 1e-6 * size ** 3:
        raise ValueError(f"{name} encloses no volume (it is flat or empty): a muscle needs a closed, solid "
                         f"shape.")
    axes = np.linalg.eigh(covariance)[1][:, ::-1].T  # main axes of the solid, the longest first
    counts = range(1, MAX_FIBRES + 1) if fibres == 0 else (fibres,)
    best = {}
    for k in counts:
        for direction in axes[:2]:
            fit = _fit_along(v, f, volume, centroid, covariance, direction, k)
            if fit is None:
                continue
            mean = _unit(sum(fb.volume * _unit(fb.insertion - fb.origin) for fb in fit[0]))
            again = None if abs(mean @ direction) > REFINE_COS else \
                _fit_along(v, f, volume, centroid, covariance, mean, k)
            for candidate in (fit, again):
                if candidate is not None and (k not in best or candidate[1] < best[k][1]):
                    best[k] = candidate
        if fibres == 0 and k in best and best[k][1] <= ERROR_FLOOR * max(fb.peak_radius for fb in best[k][0]):
            break  # no count of fibres can be better by FIBRE_GAIN: more would count as equal
    if not best:
        raise ValueError(f"{name} could not be cut into sections along its length.")
    chosen = min(best)
    floor = ERROR_FLOOR * max(fb.peak_radius for fb in best[chosen][0])
    for k in sorted(best):
        if max(best[k][1], floor) < (1.0 - FIBRE_GAIN) * max(best[chosen][1], floor):
            chosen = k
    found, rms, worst = best[chosen]
    return MeshFit(tuple(found), float(volume), float(rms), float(worst))


def fit_error(fibres, vertices):
    """``(rms, max)`` of ``|min_f f_M|`` over ``vertices (V, 3)`` for ``fibres`` (FibreFit) [m]."""
    from .batch import evaluate_muscles
    values, _ = evaluate_muscles([fb.muscle() for fb in fibres], vertices)
    gap = np.abs(values.min(axis=1))
    return float(np.sqrt(np.mean(gap * gap))), float(gap.max())


def _unit(x):
    return x / np.linalg.norm(x)


_PAIRS = np.array([(a, b) for a in SHAPE_RANGE for b in SHAPE_RANGE])
"""All 81 ``(alpha, beta)`` pairs, ``(81, 2)``."""


def _phi_table(s):
    """``phi(alpha, beta; s)`` of every pair of ``_PAIRS`` at ``s (N,)``, ``(81, N)``."""
    a, b = _PAIRS[:, :1], _PAIRS[:, 1:]
    return s ** (a - 1) * (1.0 - s) ** (b - 1) / PHI_NORMALISER[a - 1, b - 1]


def _fit_along(v, f, volume, centroid, covariance, direction, k):
    """``(fibres, error_rms, error_max)`` of ``k`` fibres with sections along ``direction``, or None if the
    sections leave a fibre empty."""
    frame = _sections.plane_frame(direction)
    d = frame[0]
    across = (np.eye(3) - np.outer(d, d)) @ covariance @ (np.eye(3) - np.outer(d, d))
    e1 = np.linalg.eigh(across)[1][:, -1]
    frame = (d, e1, np.cross(d, e1))
    h = (v - centroid) @ d
    t_lo, t_hi = float(h.min()), float(h.max())
    levels = t_lo + (np.arange(SECTIONS) + 0.5) * (t_hi - t_lo) / SECTIONS
    start, end, level = _sections.section_segments(v, f, centroid, frame, levels)
    whole = _sections.strip_moments(start, end, level, SECTIONS)
    low, high = _sections.section_extent(start, end, level, SECTIONS)
    present = whole[:, 0] > 0.0
    low, high = np.where(present, low, 0.0), np.where(present, high, 0.0)
    total = whole[:, 0].sum()
    s = (np.arange(SECTIONS) + 0.5) / SECTIONS
    out = []
    for j in range(k):
        if k == 1:
            m = whole
        else:
            m = _sections.strip_moments(start, end, level, SECTIONS, low + (high - low) * j / k,
                                        low + (high - low) * (j + 1) / k)
        fibre = _fibre(m, frame, centroid, levels, (t_lo, t_hi), s, volume * m[:, 0].sum() / total)
        if fibre is None:
            return None
        out.append(fibre)
    rms, worst = fit_error(out, v)
    return out, rms, worst


def _fibre(m, frame, centroid, levels, ends, s, volume):
    """One fibre from its sections' moments ``m (N, 6)`` (``sections.MOMENTS``), or None if too few sections."""
    d, e1, e2 = frame
    area = m[:, 0]
    keep = area > 1e-9 * area.max() if area.max() > 0.0 else np.zeros(len(area), bool)
    if keep.sum() < 3:
        return None
    a = area[keep]
    x, y = m[keep, 1] / a, m[keep, 2] / a
    centres = centroid + levels[keep, None] * d + x[:, None] * e1 + y[:, None] * e2
    mean = (a[:, None] * centres).sum(axis=0) / a.sum()
    spread = np.einsum("i,ij,ik->jk", a, centres - mean, centres - mean)
    u = np.linalg.eigh(spread)[1][:, -1]
    u = u if u @ d > 0.0 else -u
    cos_g = float(u @ d)
    if cos_g < 0.2:
        return None  # the fibre runs along the sections, not across them
    along = (mean - centroid) @ d
    origin = mean + u * (ends[0] - along) / cos_g
    insertion = mean + u * (ends[1] - along) / cos_g
    length = float(np.linalg.norm(insertion - origin))
    # second moments about each centre, in 3D, projected on the fibre's normal plane
    cxx = m[keep, 3] / a - x * x
    cyy = m[keep, 4] / a - y * y
    cxy = m[keep, 5] / a - x * y
    basis = np.stack([e1, e2], axis=1)  # (3, 2)
    c2 = np.stack([np.stack([cxx, cxy], -1), np.stack([cxy, cyy], -1)], -2)  # (n, 2, 2)
    c3 = basis @ c2 @ basis.T
    p = np.eye(3) - np.outer(u, u)
    evals, evecs = np.linalg.eigh(p @ c3 @ p)
    ratio = np.clip(evals[:, 1] / np.maximum(evals[:, 2], 1e-300), 0.0, 1.0)  # b^2 / a^2 (evals[:, 0] ~ 0)
    vote = a >= FLAT_SECTIONS * a.max()
    flat = float(np.sqrt(max(0.0, 1.0 - (a[vote] * ratio[vote]).sum() / a[vote].sum())))
    eccentricity = min(flat, MAX_ECCENTRICITY)
    long_dirs = evecs[:, :, 2]
    outer = np.einsum("i,ij,ik->jk", a[vote], long_dirs[vote], long_dirs[vote])
    n = p @ np.linalg.eigh(outer)[1][:, -1]
    n = n / np.linalg.norm(n)
    # rest profile: the pair whose w phi is closest to the equivalent radii (eq. 3-5)
    width = float(np.sqrt(volume / (np.pi * length)))
    radius = np.zeros(len(s))
    radius[keep] = np.sqrt(a * cos_g / np.pi)
    residual = ((width * _phi_table(s) - radius) ** 2).mean(axis=1)
    best = int(np.argmin(residual))
    alpha, beta = (int(c) for c in _PAIRS[best])
    return FibreFit(origin, insertion, width, alpha, beta, eccentricity, n, float(volume),
                    float(np.sqrt(residual[best])))


def nearest_bones(points, heads, tails):
    """``(index (P,), distance (P,) [m], along (P,))``: the bone segment nearest each point, the distance to it
    and where along it the nearest point lies (0 at the head, 1 at the tail)."""
    p = np.asarray(points, dtype=np.float64)[:, None, :]
    h = np.asarray(heads, dtype=np.float64)[None]
    e = np.asarray(tails, dtype=np.float64)[None] - h
    t = np.clip(np.einsum("pbi,pbi->pb", p - h, e) / np.maximum(np.einsum("pbi,pbi->pb", e, e), 1e-24), 0.0, 1.0)
    dist = np.linalg.norm(p - (h + t[..., None] * e), axis=2)
    index = np.argmin(dist, axis=1)
    rows = np.arange(len(index))
    return index, dist[rows, index], t[rows, index]


@dataclass(frozen=True)
class Attachment:
    """Where a fitted fibre attaches: ``origin_bone``, ``insertion_bone`` and ``skin_bone`` (indices into the
    skeleton's bones); the fibre is ordered so that its origin lies on the origin bone."""

    fibre: FibreFit
    origin_bone: int
    insertion_bone: int
    skin_bone: int


def _depth(bone, parents):
    depth = 0
    while parents[bone] >= 0:
        bone = parents[bone]
        depth += 1
    return depth


def _ancestor(a, b, parents):
    """Whether bone ``a`` is ``b`` or one of its ancestors."""
    while b >= 0:
        if a == b:
            return True
        b = parents[b]
    return False


def attach_to_bones(fit: MeshFit, heads, tails, parents, name: str = "the mesh", skeleton: str = "the skeleton"):
    """One :class:`Attachment` per fibre of ``fit``: each end on its nearest bone (segments ``heads``, ``tails``
    ``(B, 3) [m]``, ``parents (B,)``, -1 for a root), the origin on the bone nearer the root (an ancestor of the
    other, else the shallower; on one bone, the end nearer its head), the skin bone the one of the two nearer the
    fibre's thickest point. Raises ``ValueError`` if the skeleton has no bones or an end lies more than
    ``BONE_REACH`` fibre lengths from every bone."""
    heads = np.asarray(heads, dtype=np.float64).reshape(-1, 3)
    tails = np.asarray(tails, dtype=np.float64).reshape(-1, 3)
    parents = [int(p) for p in parents]
    if not len(heads):
        raise ValueError(f"{skeleton} has no bones to attach {name} to.")
    out = []
    for fibre in fit.fibres:
        index, dist, along = nearest_bones(np.stack([fibre.origin, fibre.insertion]), heads, tails)
        reach = BONE_REACH * fibre.length
        if dist.max() > reach:
            raise ValueError(f"{name} lies too far from the bones of {skeleton}: its ends are {dist[0]:.3g} m and "
                             f"{dist[1]:.3g} m from the nearest bone, more than half its length ({reach:.3g} m). "
                             f"Move it onto the skeleton, or select the armature it belongs to.")
        o, i = int(index[0]), int(index[1])
        if o == i:
            swap = along[0] > along[1]
        elif _ancestor(o, i, parents):
            swap = False
        elif _ancestor(i, o, parents):
            swap = True
        else:
            swap = _depth(i, parents) < _depth(o, parents)
        if swap:
            fibre, o, i = fibre.reversed(), i, o
        s_peak = (fibre.alpha - 1) / max(fibre.alpha + fibre.beta - 2, 1)
        belly = fibre.origin + s_peak * (fibre.insertion - fibre.origin)
        d = nearest_bones(np.repeat(belly[None], 1, axis=0), heads[[o, i]], tails[[o, i]])[0]
        out.append(Attachment(fibre, o, i, (o, i)[int(d[0])]))
    return out


def active_pair(alpha: int, beta: int) -> tuple[int, int]:
    """The active profile given to a fitted muscle: the rest pair sharpened by one, ``(alpha + 1, beta + 1)`` (at
    most 9), a narrower belly about the same place."""
    return min(alpha + 1, 9), min(beta + 1, 9)
