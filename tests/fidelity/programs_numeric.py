"""Fidelity corpus: numeric and scientific Python (numpy, scipy, sympy, mpmath, gmpy2,
networkx, numba, torch on CPU, statsmodels). Every program is deterministic: RNGs are
seeded, floats are printed rounded, nothing depends on time, hashing or the machine."""

from tests.fidelity.program import Program

NUMPY = [
    Program("numpy_linear_solve", r'''
import numpy as np

A = np.array([[4.0, -2.0, 1.0], [-2.0, 4.0, -2.0], [1.0, -2.0, 4.0]])
b = np.array([11.0, -16.0, 17.0])
x = np.linalg.solve(A, b)
print("x =", np.round(x, 6))
inv = np.linalg.inv(A)
print("inverse:")
print(np.round(inv, 5))
print("A @ inv == I:", np.allclose(A @ inv, np.eye(3)))
print("residual norm < 1e-10:", bool(np.linalg.norm(A @ x - b) < 1e-10))
print("det =", round(float(np.linalg.det(A)), 6))
print("cond =", round(float(np.linalg.cond(A)), 6))
'''),
    Program("numpy_describe_sample", r'''
import numpy as np

rng = np.random.default_rng(0)
data = rng.normal(loc=50.0, scale=12.0, size=1000)
print(f"n={data.size}")
print(f"mean={data.mean():.4f} std={data.std(ddof=1):.4f}")
print(f"min={data.min():.4f} max={data.max():.4f}")
for q in (5, 25, 50, 75, 95):
    print(f"p{q:02d}={np.percentile(data, q):.4f}")
z = (data - data.mean()) / data.std()
print("outliers |z|>3:", int(np.sum(np.abs(z) > 3)))
counts, edges = np.histogram(data, bins=8)
for c, lo, hi in zip(counts, edges[:-1], edges[1:]):
    print(f"[{lo:7.2f}, {hi:7.2f}) {'#' * (c // 10)} {c}")
'''),
    Program("numpy_broadcast_mismatch", r'''
import numpy as np

prices = np.arange(12, dtype=float).reshape(3, 4)
weights = np.array([0.2, 0.3, 0.5])
print("prices shape:", prices.shape, "weights shape:", weights.shape)
weighted = prices * weights  # intended: weights[:, None]
print(weighted.sum())
'''),
    Program("numpy_singular_inverse", r'''
import numpy as np

M = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
print("rank:", np.linalg.matrix_rank(M))
print("det ~ 0:", abs(np.linalg.det(M)) < 1e-12)
Minv = np.linalg.inv(M)
print(Minv)
'''),
    Program("numpy_stdin_matrix", r'''
import sys
import numpy as np

data = sys.stdin.read().split()
n = int(data[0])
M = np.array(list(map(float, data[1:1 + n * n]))).reshape(n, n)
print("matrix:")
print(M.astype(int))
print("trace:", int(np.trace(M)))
print("det:", round(float(np.linalg.det(M)), 6))
print("rank:", int(np.linalg.matrix_rank(M)))
print("symmetric:", bool(np.allclose(M, M.T)))
w = np.linalg.eigvalsh(M)
print("eigenvalues:", " ".join(f"{v:.5f}" for v in w))
print("row sums:", M.sum(axis=1).astype(int).tolist())
''', stdin="4\n4 1 0 2\n1 3 1 0\n0 1 5 1\n2 0 1 6\n"),
    Program("numpy_moving_average", r'''
import numpy as np

rng = np.random.default_rng(42)
signal = np.cumsum(rng.standard_normal(30)).round(3)
window = 5
kernel = np.ones(window) / window
ma_conv = np.convolve(signal, kernel, mode="valid")
cs = np.cumsum(np.insert(signal, 0, 0.0))
ma_cum = (cs[window:] - cs[:-window]) / window
print("length:", len(ma_conv))
print("methods agree:", np.allclose(ma_conv, ma_cum))
for i, v in enumerate(ma_conv[:10]):
    print(i, f"{v:.4f}")
crossings = np.where(np.diff(np.sign(signal[window - 1:] - ma_conv)) != 0)[0]
print("crossings:", crossings.tolist())
'''),
    Program("numpy_game_of_life", r'''
import numpy as np

def step(board):
    n = sum(np.roll(np.roll(board, dy, 0), dx, 1)
            for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
    return ((n == 3) | (board & (n == 2))).astype(np.uint8)

board = np.zeros((10, 10), dtype=np.uint8)
board[1, 2] = board[2, 3] = board[3, 1] = board[3, 2] = board[3, 3] = 1  # glider
rng = np.random.default_rng(7)
board[6:9, 6:9] = rng.integers(0, 2, size=(3, 3))
for gen in range(4):
    board = step(board)
    print(f"generation {gen + 1}: alive={int(board.sum())}")
for row in board:
    print("".join("#" if c else "." for c in row))
'''),
    Program("numpy_polyfit_noise", r'''
import numpy as np

rng = np.random.default_rng(1)
x = np.linspace(-3, 3, 50)
y = 0.5 * x**3 - 2.0 * x**2 + x + 4.0 + rng.normal(0, 0.3, x.size)
for deg in (1, 2, 3, 4):
    coeffs = np.polyfit(x, y, deg)
    resid = y - np.polyval(coeffs, x)
    print(f"deg {deg}: rss={np.sum(resid**2):10.4f} coeffs={np.round(coeffs, 3).tolist()}")
p = np.poly1d(np.polyfit(x, y, 3))
print("roots:", sorted(round(float(r.real), 4) for r in p.roots if abs(r.imag) < 1e-9))
print("derivative at 1:", round(float(p.deriv()(1.0)), 4))
'''),
    Program("numpy_fft_dominant", r'''
import numpy as np

fs = 256
t = np.arange(fs) / fs
rng = np.random.default_rng(3)
sig = 1.5 * np.sin(2 * np.pi * 12 * t) + 0.8 * np.sin(2 * np.pi * 40 * t + 0.3)
sig += 0.2 * rng.standard_normal(t.size)
spec = np.abs(np.fft.rfft(sig)) / (fs / 2)
freqs = np.fft.rfftfreq(fs, 1 / fs)
top = np.argsort(spec)[::-1][:3]
for i in sorted(top):
    print(f"freq {freqs[i]:5.1f} Hz amplitude {spec[i]:.3f}")
back = np.fft.irfft(np.fft.rfft(sig), n=fs)
print("roundtrip ok:", np.allclose(back, sig))
'''),
    Program("numpy_kmeans", r'''
import numpy as np

rng = np.random.default_rng(0)
centers_true = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
X = np.vstack([c + rng.normal(0, 0.7, (40, 2)) for c in centers_true])
k = 3
centers = X[[0, 40, 80]].copy()
for it in range(50):
    d = np.linalg.norm(X[:, None, :] - centers[None, :, :], axis=2)
    labels = d.argmin(axis=1)
    new = np.array([X[labels == j].mean(axis=0) for j in range(k)])
    if np.allclose(new, centers):
        break
    centers = new
print("iterations:", it + 1)
for j in range(k):
    print(f"cluster {j}: size={int(np.sum(labels == j))} center=({centers[j, 0]:.3f}, {centers[j, 1]:.3f})")
inertia = sum(np.sum((X[labels == j] - centers[j]) ** 2) for j in range(k))
print(f"inertia={inertia:.3f}")
'''),
    Program("numpy_structured_sort", r'''
import numpy as np

dt = np.dtype([("name", "U10"), ("dept", "U6"), ("salary", "i4"), ("age", "i2")])
staff = np.array([
    ("alice", "eng", 120, 34), ("bob", "ops", 85, 45), ("carol", "eng", 135, 29),
    ("dave", "sales", 70, 38), ("erin", "ops", 92, 31), ("frank", "eng", 120, 41),
    ("gina", "sales", 88, 27),
], dtype=dt)
order = np.lexsort((staff["name"], -staff["salary"]))
for row in staff[order]:
    print(f"{row['name']:<6} {row['dept']:<6} {row['salary']:>4} {row['age']:>3}")
depts, inv = np.unique(staff["dept"], return_inverse=True)
totals = np.bincount(inv, weights=staff["salary"])
for d, tot, cnt in zip(depts, totals, np.bincount(inv)):
    print(f"{d}: total={int(tot)} mean={tot / cnt:.2f}")
print("over 35:", staff[staff["age"] > 35]["name"].tolist())
'''),
    Program("numpy_lstsq_regression", r'''
import numpy as np

rng = np.random.default_rng(123)
n = 200
X = np.column_stack([np.ones(n), rng.uniform(0, 10, n), rng.uniform(-5, 5, n)])
beta = np.array([2.0, 0.7, -1.3])
y = X @ beta + rng.normal(0, 0.5, n)
coef, res, rank, sv = np.linalg.lstsq(X, y, rcond=None)
print("coef:", np.round(coef, 4).tolist())
print("rank:", rank)
yhat = X @ coef
r2 = 1 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2)
print(f"R^2 = {r2:.5f}")
sigma2 = np.sum((y - yhat) ** 2) / (n - X.shape[1])
se = np.sqrt(np.diag(sigma2 * np.linalg.inv(X.T @ X)))
print("std errors:", np.round(se, 5).tolist())
'''),
    Program("numpy_einsum_tricks", r'''
import numpy as np

a = np.arange(1, 10).reshape(3, 3)
b = np.arange(9, 0, -1).reshape(3, 3)
print("trace:", np.einsum("ii", a))
print("diag:", np.einsum("ii->i", a).tolist())
print("matmul equal:", np.array_equal(np.einsum("ij,jk->ik", a, b), a @ b))
print("outer:")
print(np.einsum("i,j->ij", np.arange(3), np.arange(4)))
batch = np.arange(24).reshape(2, 3, 4)
print("batch sums:", np.einsum("bij->b", batch).tolist())
print("frobenius inner:", np.einsum("ij,ij->", a, b))
v = np.array([3.0, 4.0])
print("norm:", float(np.sqrt(np.einsum("i,i", v, v))))
'''),
    Program("numpy_validate_exit", r'''
import sys
import numpy as np

rng = np.random.default_rng(5)
readings = rng.normal(20.0, 2.0, 48).round(2)
readings[[7, 30]] = np.nan
print("sensor readings:", readings.size)
missing = np.flatnonzero(np.isnan(readings))
print("missing at:", missing.tolist())
filled = np.where(np.isnan(readings), np.nanmean(readings), readings)
print(f"mean after fill: {filled.mean():.3f}")
if missing.size:
    print(f"error: {missing.size} missing readings", file=sys.stderr)
    sys.exit(3)
print("all good")
'''),
    Program("numpy_markov_stationary", r'''
import numpy as np

P = np.array([[0.9, 0.075, 0.025], [0.15, 0.8, 0.05], [0.25, 0.25, 0.5]])
assert np.allclose(P.sum(axis=1), 1)
pi = np.ones(3) / 3
for _ in range(500):
    pi = pi @ P
print("power iteration:", np.round(pi, 6).tolist())
w, v = np.linalg.eig(P.T)
i = int(np.argmin(np.abs(w - 1)))
st = np.real(v[:, i]); st /= st.sum()
print("eigenvector:", np.round(st, 6).tolist())
print("agree:", np.allclose(pi, st))
print("P^10 row 0:", np.round(np.linalg.matrix_power(P, 10)[0], 5).tolist())
'''),
    Program("numpy_random_walk", r'''
import numpy as np

def main():
    rng = np.random.default_rng(2024)
    walks = rng.choice([-1, 1], size=(500, 200))
    pos = walks.cumsum(axis=1)
    print("mean final position:", round(float(pos[:, -1].mean()), 3))
    print("mean |final|:", round(float(np.abs(pos[:, -1]).mean()), 3))
    hit = np.abs(pos) >= 10
    reached = hit.any(axis=1)
    first = hit.argmax(axis=1)[reached]
    print("fraction reaching 10:", round(float(reached.mean()), 3))
    print("mean first passage:", round(float(first.mean()), 3))
    print("max excursion:", int(np.abs(pos).max()))

if __name__ == "__main__":
    main()
'''),
]

SCIPY = [
    Program("scipy_stats_ttest", r'''
import numpy as np
from scipy import stats

rng = np.random.default_rng(0)
control = rng.normal(100, 15, 40)
treated = rng.normal(108, 15, 40)
t, p = stats.ttest_ind(treated, control)
print(f"independent t={t:.4f} p={p:.5f}")
tw, pw = stats.ttest_ind(treated, control, equal_var=False)
print(f"welch t={tw:.4f} p={pw:.5f}")
u, pu = stats.mannwhitneyu(treated, control, alternative="two-sided")
print(f"mann-whitney U={u:.1f} p={pu:.5f}")
print("normality p (shapiro):", round(float(stats.shapiro(control).pvalue), 4))
print("significant at 0.05:", bool(p < 0.05))
'''),
    Program("scipy_stats_distributions", r'''
from scipy import stats

print("norm.cdf(1.96) =", round(float(stats.norm.cdf(1.96)), 6))
print("norm.ppf(0.975) =", round(float(stats.norm.ppf(0.975)), 6))
b = stats.binom(n=20, p=0.3)
print("binom P(X=6) =", round(float(b.pmf(6)), 6))
print("binom P(X<=4) =", round(float(b.cdf(4)), 6))
print("binom mean/var =", b.mean(), round(float(b.var()), 6))
print("poisson P(X>=5; mu=2.5) =", round(float(stats.poisson.sf(4, 2.5)), 6))
print("t crit df=9 =", round(float(stats.t.ppf(0.975, 9)), 5))
print("chi2 crit df=3 =", round(float(stats.chi2.ppf(0.95, 3)), 5))
e = stats.expon(scale=2.0)
print("expon median =", round(float(e.median()), 6))
print("gamma interval =", [round(float(v), 4) for v in stats.gamma(a=3).interval(0.9)])
'''),
    Program("scipy_stats_linregress_stdin", r'''
import sys
from scipy import stats

xs, ys = [], []
for line in sys.stdin:
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    a, b = line.split(",")
    xs.append(float(a)); ys.append(float(b))
res = stats.linregress(xs, ys)
print(f"n={len(xs)}")
print(f"slope={res.slope:.5f} intercept={res.intercept:.5f}")
print(f"r={res.rvalue:.5f} p={res.pvalue:.3e} stderr={res.stderr:.5f}")
rho, p = stats.spearmanr(xs, ys)
print(f"spearman rho={rho:.5f}")
print("predict x=12:", round(res.intercept + res.slope * 12, 4))
''', stdin="# hours,score\n1,52\n2,55\n3,61\n4,60\n5,68\n6,71\n7,70\n8,79\n9,83\n10,85\n"),
    Program("scipy_stats_chi2_contingency", r'''
import numpy as np
from scipy.stats import chi2_contingency, fisher_exact

table = np.array([[30, 14, 6], [22, 25, 13]])
chi2, p, dof, expected = chi2_contingency(table)
print(f"chi2={chi2:.4f} p={p:.5f} dof={dof}")
print("expected:")
print(np.round(expected, 3))
odds, pf = fisher_exact([[12, 5], [3, 10]])
print(f"fisher odds={odds:.4f} p={pf:.5f}")
'''),
    Program("scipy_optimize_rosenbrock", r'''
import numpy as np
from scipy.optimize import minimize, rosen, rosen_der

x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
for method in ("Nelder-Mead", "BFGS", "L-BFGS-B"):
    kw = {"jac": rosen_der} if method != "Nelder-Mead" else {"options": {"xatol": 1e-8, "fatol": 1e-10, "maxiter": 5000}}
    res = minimize(rosen, x0, method=method, **kw)
    print(f"{method:12s} success={res.success} x={np.round(res.x, 4).tolist()} f<1e-6={bool(res.fun < 1e-6)}")
bounded = minimize(rosen, x0, method="L-BFGS-B", jac=rosen_der, bounds=[(-2, 0.5)] * 5)
print("bounded x:", np.round(bounded.x, 4).tolist())
'''),
    Program("scipy_optimize_root_scalar", r'''
import math
from scipy.optimize import brentq, newton, root_scalar, fsolve

f = lambda x: x**3 - 2 * x - 5
print("brentq:", round(brentq(f, 2, 3), 10))
print("newton:", round(newton(f, 2.0, fprime=lambda x: 3 * x**2 - 2), 10))
r = root_scalar(lambda x: math.cos(x) - x, bracket=[0, 1], method="bisect", xtol=1e-12)
print("dottie number:", round(r.root, 9), "converged:", r.converged)
sol = fsolve(lambda v: [v[0] ** 2 + v[1] ** 2 - 4, v[0] - v[1] ** 2 + 1], [1.0, 1.0])
print("system:", [round(float(s), 8) for s in sol])
'''),
    Program("scipy_optimize_linprog", r'''
from scipy.optimize import linprog

# maximise profit 40a + 30b + 50c subject to labour, material and demand limits
c = [-40, -30, -50]
A_ub = [[2, 1, 3], [1, 2, 2], [0, 0, 1]]
b_ub = [100, 80, 20]
res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(0, None)] * 3, method="highs")
print("status:", res.status, res.message.split(".")[0])
print("plan:", [round(float(v), 6) for v in res.x])
print("profit:", round(-res.fun, 6))
print("slack:", [round(float(v), 6) for v in res.slack])
'''),
    Program("scipy_optimize_curve_fit", r'''
import numpy as np
from scipy.optimize import curve_fit

def model(t, a, k, c):
    return a * np.exp(-k * t) + c

rng = np.random.default_rng(11)
t = np.linspace(0, 5, 40)
y = model(t, 3.0, 1.3, 0.5) + rng.normal(0, 0.05, t.size)
popt, pcov = curve_fit(model, t, y, p0=[1, 1, 0])
perr = np.sqrt(np.diag(pcov))
for name, v, e in zip("akc", popt, perr):
    print(f"{name} = {v:.4f} +/- {e:.4f}")
print("half-life:", round(float(np.log(2) / popt[1]), 4))
'''),
    Program("scipy_linalg_lu_qr", r'''
import numpy as np
from scipy import linalg

A = np.array([[2.0, 5.0, 8.0, 7.0], [5.0, 2.0, 2.0, 8.0], [7.0, 5.0, 6.0, 6.0], [5.0, 4.0, 4.0, 8.0]])
P, L, U = linalg.lu(A)
print("P:"); print(P.astype(int))
print("L:"); print(np.round(L, 4))
print("U:"); print(np.round(U, 4))
print("PLU == A:", np.allclose(P @ L @ U, A))
Q, R = linalg.qr(A)
print("|diag R|:", np.round(np.abs(np.diag(R)), 4).tolist())
print("det:", round(float(linalg.det(A)), 6))
lu, piv = linalg.lu_factor(A)
print("solve:", np.round(linalg.lu_solve((lu, piv), np.ones(4)), 6).tolist())
'''),
    Program("scipy_linalg_expm", r'''
import numpy as np
from scipy.linalg import expm, logm, sqrtm, cholesky, eigh

K = np.array([[0.0, -1.0], [1.0, 0.0]])
R = expm(K * np.pi / 2)
print("rotation by 90 deg:"); print(np.round(R, 8) + 0.0)
S = np.array([[4.0, 2.0, 0.6], [2.0, 5.0, 1.0], [0.6, 1.0, 3.0]])
C = cholesky(S, lower=True)
print("cholesky L:"); print(np.round(C, 5))
print("sqrtm^2 == S:", np.allclose(sqrtm(S) @ sqrtm(S), S))
print("expm(logm(S)) == S:", np.allclose(expm(logm(S)), S))
w, v = eigh(S)
print("eigenvalues:", np.round(w, 5).tolist())
'''),
    Program("scipy_linalg_not_posdef", r'''
import numpy as np
from scipy.linalg import cholesky

cov = np.array([[1.0, 0.9, 0.7], [0.9, 1.0, 0.95], [0.7, 0.95, 0.2]])
print("symmetric:", bool(np.allclose(cov, cov.T)))
print("min eigenvalue:", round(float(np.linalg.eigvalsh(cov).min()), 5))
L = cholesky(cov, lower=True)
print(L)
'''),
    Program("scipy_integrate_quad", r'''
import numpy as np
from scipy import integrate

val, err = integrate.quad(lambda x: np.exp(-x**2), -np.inf, np.inf)
print("gaussian:", round(val, 10), "sqrt(pi):", round(float(np.sqrt(np.pi)), 10))
val, _ = integrate.quad(lambda x: np.sin(x) / x if x else 1.0, 0, 50, limit=200)
print("Si(50):", round(val, 8))
val, _ = integrate.dblquad(lambda y, x: x * y, 0, 1, lambda x: 0, lambda x: 1 - x)
print("double integral:", round(val, 10), "exact 1/24:", round(1 / 24, 10))
x = np.linspace(0, np.pi, 101)
print("simpson sin:", round(float(integrate.simpson(np.sin(x), x=x)), 8))
print("trapezoid sin:", round(float(integrate.trapezoid(np.sin(x), x)), 8))
'''),
    Program("scipy_integrate_solve_ivp", r'''
import numpy as np
from scipy.integrate import solve_ivp

def lotka(t, z, a=1.1, b=0.4, c=0.4, d=0.1):
    x, y = z
    return [a * x - b * x * y, -c * y + d * x * y]

sol = solve_ivp(lotka, [0, 15], [10, 5], t_eval=np.linspace(0, 15, 7), rtol=1e-9, atol=1e-9)
print("success:", sol.success)
for t, x, y in zip(sol.t, sol.y[0], sol.y[1]):
    print(f"t={t:5.2f} prey={x:9.4f} predators={y:9.4f}")
decay = solve_ivp(lambda t, y: -0.5 * y, [0, 4], [2.0], rtol=1e-10, atol=1e-12)
print("decay y(4):", round(float(decay.y[0, -1]), 7), "exact:", round(2 * np.exp(-2.0), 7))
'''),
    Program("scipy_special_functions", r'''
from scipy import special

print("gamma(5.5) =", round(float(special.gamma(5.5)), 8))
print("lgamma(100) =", round(float(special.gammaln(100)), 6))
print("erf(0.5) =", round(float(special.erf(0.5)), 10))
print("C(50, 25) =", special.comb(50, 25, exact=True))
print("P(10, 3) =", special.perm(10, 3, exact=True))
print("J0(2.4048) =", round(float(special.jv(0, 2.4048)), 6))
print("beta(2, 3) =", round(float(special.beta(2, 3)), 10))
print("zeta(2) =", round(float(special.zeta(2)), 10))
print("expit(0.3) =", round(float(special.expit(0.3)), 10))
print("logsumexp =", round(float(special.logsumexp([1000.0, 1000.5, 999.0])), 8))
print("legendre P3:", [round(float(c), 4) for c in special.legendre(3).coeffs])
'''),
    Program("scipy_sparse_poisson", r'''
import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve, eigsh

n = 50
h = 1.0 / (n + 1)
main = 2.0 * np.ones(n)
off = -1.0 * np.ones(n - 1)
A = sparse.diags([off, main, off], [-1, 0, 1], format="csr") / h**2
x = np.linspace(h, 1 - h, n)
f = np.pi**2 * np.sin(np.pi * x)
u = spsolve(A, f)
print("nnz:", A.nnz, "shape:", A.shape, "format:", A.format)
print("max error:", f"{np.max(np.abs(u - np.sin(np.pi * x))):.3e}")
vals = eigsh(A, k=3, sigma=0, which="LM", return_eigenvectors=False)
print("smallest eigenvalues:", sorted(round(float(v), 3) for v in vals))
coo = sparse.random(6, 6, density=0.3, random_state=np.random.default_rng(0), format="coo")
print("random nnz:", coo.nnz, "dense sum:", round(float(coo.toarray().sum()), 6))
'''),
    Program("scipy_sparse_csgraph", r'''
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra, minimum_spanning_tree, connected_components

edges = [(0, 1, 4), (0, 2, 1), (2, 1, 2), (1, 3, 1), (2, 3, 5), (3, 4, 3), (5, 6, 2)]
n = 7
rows, cols, w = zip(*edges)
G = csr_matrix((w, (rows, cols)), shape=(n, n))
dist, pred = dijkstra(G, directed=False, indices=0, return_predecessors=True)
print("distances from 0:", [None if np.isinf(d) else int(d) for d in dist])
path, node = [], 4
while node >= 0:
    path.append(int(node)); node = pred[node]
print("path 0->4:", path[::-1])
mst = minimum_spanning_tree(G)
print("mst weight:", int(mst.sum()))
ncomp, labels = connected_components(G, directed=False)
print("components:", ncomp, labels.tolist())
'''),
    Program("scipy_signal_butter", r'''
import numpy as np
from scipy import signal

fs = 500.0
t = np.arange(0, 1.0, 1 / fs)
rng = np.random.default_rng(9)
clean = np.sin(2 * np.pi * 5 * t)
noisy = clean + 0.5 * np.sin(2 * np.pi * 80 * t) + 0.1 * rng.standard_normal(t.size)
b, a = signal.butter(4, 20, btype="low", fs=fs)
print("b:", np.round(b, 8).tolist())
print("a:", np.round(a, 6).tolist())
filtered = signal.filtfilt(b, a, noisy)
rms = lambda v: float(np.sqrt(np.mean(v**2)))
print(f"rms error before: {rms(noisy - clean):.4f}")
print(f"rms error after:  {rms(filtered - clean):.4f}")
w, h = signal.freqz(b, a, worN=[5, 20, 80], fs=fs)
print("gain dB:", [round(float(20 * np.log10(abs(v))), 3) for v in h])
'''),
    Program("scipy_signal_find_peaks", r'''
import numpy as np
from scipy.signal import find_peaks, peak_prominences, savgol_filter

x = np.linspace(0, 6 * np.pi, 300)
y = np.sin(x) * np.exp(-x / 10) + 0.3 * np.sin(5 * x)
smooth = savgol_filter(y, 21, 3)
peaks, props = find_peaks(y, height=0.2, distance=10)
print("peaks:", peaks.tolist())
print("heights:", np.round(props["peak_heights"], 4).tolist())
prom = peak_prominences(y, peaks)[0]
print("prominences:", np.round(prom, 4).tolist())
sp, _ = find_peaks(smooth, prominence=0.3)
print("smoothed peaks:", sp.tolist())
'''),
    Program("scipy_interpolate_spline", r'''
import numpy as np
from scipy.interpolate import CubicSpline, interp1d, PchipInterpolator

x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
y = np.array([0.0, 0.8, 0.9, 0.1, -0.8, -1.0])
cs = CubicSpline(x, y, bc_type="natural")
lin = interp1d(x, y)
pch = PchipInterpolator(x, y)
for q in (0.5, 1.5, 2.5, 3.5, 4.5):
    print(f"x={q}: cubic={float(cs(q)):+.5f} linear={float(lin(q)):+.5f} pchip={float(pch(q)):+.5f}")
print("cubic derivative at 2:", round(float(cs(2.0, 1)), 5))
print("integral 0..5:", round(float(cs.integrate(0, 5)), 5))
print("roots:", [round(float(r), 5) for r in cs.roots(extrapolate=False)])
'''),
    Program("scipy_interpolate_unsorted", r'''
import numpy as np
from scipy.interpolate import CubicSpline

times = np.array([0.0, 2.0, 1.0, 3.0])
temps = np.array([10.0, 14.0, 12.5, 13.0])
print("fitting spline to", len(times), "points")
spline = CubicSpline(times, temps)
print(spline(1.5))
'''),
    Program("scipy_spatial_kdtree", r'''
import numpy as np
from scipy.spatial import cKDTree

rng = np.random.default_rng(4)
pts = rng.uniform(0, 100, size=(300, 2))
tree = cKDTree(pts)
queries = np.array([[50.0, 50.0], [0.0, 0.0], [99.0, 10.0]])
d, idx = tree.query(queries, k=3)
for q, dd, ii in zip(queries, d, idx):
    print(f"query {q.tolist()}: nearest={ii.tolist()} dist={np.round(dd, 4).tolist()}")
near = tree.query_ball_point([50.0, 50.0], r=8.0)
print("within r=8:", sorted(near))
pairs = tree.query_pairs(r=1.5)
print("close pairs:", sorted(pairs)[:10], "count:", len(pairs))
'''),
    Program("scipy_spatial_hull_distance", r'''
import numpy as np
from scipy.spatial import ConvexHull, Delaunay
from scipy.spatial.distance import cdist, pdist, squareform

pts = np.array([[0, 0], [4, 0], [4, 3], [0, 3], [2, 1], [1, 2], [3, 2], [2, 4]], dtype=float)
hull = ConvexHull(pts)
print("hull vertices:", sorted(hull.vertices.tolist()))
print("area:", round(float(hull.volume), 6), "perimeter:", round(float(hull.area), 6))
tri = Delaunay(pts)
print("triangles:", len(tri.simplices))
print("inside (2,2):", bool(tri.find_simplex([2.0, 2.0]) >= 0), "inside (5,5):", bool(tri.find_simplex([5.0, 5.0]) >= 0))
D = squareform(pdist(pts[:4]))
print("square distances:"); print(np.round(D, 3))
print("manhattan to origin:", cdist(pts, [[0, 0]], metric="cityblock").ravel().tolist())
'''),
]

SYMPY = [
    Program("sympy_solve_equations", r'''
from sympy import symbols, solve, Eq, sqrt, Rational

x, y = symbols("x y")
print(solve(x**2 - 5*x + 6, x))
print(solve(x**2 + 2*x + 5, x))
print(solve([Eq(2*x + 3*y, 12), Eq(x - y, 1)], [x, y], dict=True))
sols = solve([x**2 + y**2 - 25, y - x - 1], [x, y])
print(sorted(sols))
print(solve(sqrt(x + 7) - x + 5, x))
print(solve(x**3 - Rational(1, 8), x))
'''),
    Program("sympy_integrals", r'''
from sympy import symbols, integrate, sin, cos, exp, log, oo, pi, sqrt, simplify

x = symbols("x")
print(integrate(x**2 * exp(x), x))
print(integrate(1 / (x**2 + 1), (x, -oo, oo)))
print(integrate(sin(x)**2, (x, 0, pi)))
print(integrate(log(x), (x, 1, 2)))
print(integrate(exp(-x**2), (x, 0, oo)))
print(simplify(integrate(1 / (x * (x + 1)), x)))
print(integrate(x * cos(x), (x, 0, pi / 2)))
'''),
    Program("sympy_limits_series", r'''
from sympy import symbols, limit, series, sin, cos, exp, oo, log, tan

x, n = symbols("x n", positive=True)
print(limit(sin(x) / x, x, 0))
print(limit((1 + 1 / n) ** n, n, oo))
print(limit((exp(x) - 1 - x) / x**2, x, 0))
print(limit(x * log(x), x, 0, "+"))
print(series(cos(x), x, 0, 8))
print(series(tan(x), x, 0, 7))
print(series(exp(sin(x)), x, 0, 5))
'''),
    Program("sympy_matrix_eigen", r'''
from sympy import Matrix, symbols, eye

A = Matrix([[2, 1, 0], [1, 2, 1], [0, 1, 2]])
print("det:", A.det())
print("inverse:", A.inv())
lam = symbols("lambda")
print("charpoly:", A.charpoly(lam).as_expr())
ev = A.eigenvals()
for k in sorted(ev, key=lambda e: float(e)):
    print("eigenvalue", k, "multiplicity", ev[k])
B = Matrix([[4, 1], [2, 3]])
P, D = B.diagonalize()
print("P:", P, "D:", D)
print("check:", P * D * P.inv() == B)
print("rref:", Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).rref())
print("nullspace:", Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).nullspace())
'''),
    Program("sympy_factor_expand", r'''
from sympy import symbols, factor, expand, simplify, cancel, apart, trigsimp, sin, cos, collect

x, y, a = symbols("x y a")
print(expand((x + y) ** 5))
print(factor(x**4 - 16))
print(factor(x**3 - 3*x**2*y + 3*x*y**2 - y**3))
print(cancel((x**2 - 1) / (x**2 + 2*x + 1)))
print(apart((3*x + 5) / ((x + 1) * (x + 2) ** 2)))
print(trigsimp(sin(x)**4 - 2*cos(x)**2*sin(x)**2 + cos(x)**4))
print(collect(expand((a*x + 2) * (x - a)), x))
print(simplify((x**3 + x**2 - x - 1) / (x**2 + 2*x + 1)))
'''),
    Program("sympy_diophantine", r'''
from sympy import symbols
from sympy.solvers.diophantine import diophantine

x, y, z, t = symbols("x y z t", integer=True)
sol = diophantine(3*x + 5*y - 7, t)
print("linear:", sol)
sol = diophantine(x**2 - 2*y**2 - 1)
print("pell has solution set:", type(sol).__name__)
small = sorted((a, b) for a in range(0, 200) for b in range(0, 200) if a*a - 2*b*b == 1)
print("small pell solutions:", small)
pyth = sorted(tuple(sorted(abs(v) for v in s)) for s in diophantine(x**2 + y**2 - 65**2))
print("x^2+y^2=65^2:", sorted(set(pyth)))
'''),
    Program("sympy_number_theory", r'''
from sympy import factorint, totient, isprime, primerange, nextprime, divisors, mod_inverse, primitive_root, legendre_symbol
from sympy.ntheory.modular import crt

print("factorint(360360) =", factorint(360360))
print("totient(360360) =", totient(360360))
print("isprime(2**61-1) =", isprime(2**61 - 1))
print("primes 100..150:", list(primerange(100, 150)))
print("nextprime(10**12) =", nextprime(10**12))
print("divisors(84) =", divisors(84))
print("inverse of 17 mod 3120 =", mod_inverse(17, 3120))
print("primitive root of 101 =", primitive_root(101))
print("legendre(5, 11) =", legendre_symbol(5, 11))
print("crt:", crt([3, 5, 7], [2, 3, 2]))
'''),
    Program("sympy_dsolve", r'''
from sympy import Function, dsolve, Eq, symbols, exp, sin, checkodesol

t = symbols("t")
y = Function("y")
ode = Eq(y(t).diff(t, 2) + 4 * y(t), 0)
print(dsolve(ode))
sol = dsolve(Eq(y(t).diff(t), -2 * y(t) + exp(-t)), ics={y(0): 3})
print(sol)
print("check:", checkodesol(Eq(y(t).diff(t), -2 * y(t) + exp(-t)), sol))
print(dsolve(y(t).diff(t, 2) - 3 * y(t).diff(t) + 2 * y(t) - sin(t)))
'''),
    Program("sympy_stdin_derivative", r'''
import sys
from sympy import symbols, sympify, diff, simplify, solve

x = symbols("x")
for line in sys.stdin.read().splitlines():
    if not line.strip():
        continue
    f = sympify(line)
    d = diff(f, x)
    crit = solve(d, x)
    print(f"f(x) = {f}")
    print(f"  f'(x) = {simplify(d)}")
    print(f"  f''(x) = {simplify(diff(f, x, 2))}")
    print(f"  critical points: {crit}")
''', stdin="x**3 - 3*x\nx*exp(-x)\nsin(x)*cos(x)\n(x**2+1)/(x-1)\n"),
    Program("sympy_sympify_error", r'''
from sympy import sympify, symbols

x = symbols("x")
exprs = ["x**2 + 1", "2*x - 3", "3*x +* 2"]
for s in exprs:
    e = sympify(s)
    print(s, "->", e, "at x=2:", e.subs(x, 2))
'''),
    Program("sympy_summation", r'''
from sympy import symbols, summation, oo, factorial, Rational, pi, product, simplify, binomial

k, n = symbols("k n", integer=True, positive=True)
print(summation(k**2, (k, 1, n)).factor())
print(summation(k**3, (k, 1, n)).factor())
print(summation(1 / k**2, (k, 1, oo)))
print(summation(1 / factorial(k), (k, 0, oo)))
print(summation(Rational(1, 2)**k, (k, 0, oo)))
print(simplify(summation(binomial(n, k), (k, 0, n))))
print(product(1 + 1 / k, (k, 1, 99)))
print(sum(Rational(1, k * (k + 1)) for k in range(1, 101)))
'''),
    Program("sympy_linsolve_systems", r'''
from sympy import symbols, linsolve, nonlinsolve, Matrix, solveset, S, Interval, sin, pi

x, y, z = symbols("x y z")
print(linsolve([x + y + z - 6, 2*x - y + z - 3, x + 2*y - z - 2], (x, y, z)))
print(linsolve([x + y + z - 1, x + y + 2*z - 3], (x, y, z)))
A = Matrix([[1, 2], [2, 4]])
print(linsolve((A, Matrix([3, 6])), (x, y)))
print(linsolve((A, Matrix([3, 7])), (x, y)))
print(solveset(x**2 - 4 > 0, x, S.Reals))
print(solveset(sin(x), x, Interval(0, 4 * pi)))
print(nonlinsolve([x * y - 6, x + y - 5], [x, y]))
'''),
    Program("sympy_nsimplify_rationals", r'''
from sympy import nsimplify, Rational, sqrt, pi, E, N, continued_fraction_periodic, continued_fraction_iterator, Integer
import itertools

print(nsimplify(0.333333333333))
print(nsimplify(1.4142135623730951, [sqrt(2)]))
print(nsimplify(3.14159265358979, [pi]))
print(Rational(3, 7) + Rational(5, 11), Rational(22, 7) - Rational(355, 113))
print("sqrt(2) to 40 digits:", N(sqrt(2), 40))
print("e to 30 digits:", N(E, 30))
print("cf of sqrt(23):", continued_fraction_periodic(0, 1, 23))
print("cf of pi:", list(itertools.islice(continued_fraction_iterator(pi), 8)))
print("2**100 digits:", len(str(Integer(2)**100)))
'''),
    Program("sympy_printing", r'''
from sympy import symbols, Integral, sqrt, latex, pretty, Matrix, exp, Sum, oo, pycode, ccode

x, n = symbols("x n")
expr = Integral(sqrt(1 + x**2) * exp(-x), (x, 0, oo))
print(latex(expr))
print(pretty(Sum(1 / n**2, (n, 1, oo)), use_unicode=False))
print(latex(Matrix([[1, x], [x**2, 0]])))
print(pycode(sqrt(x) + x**3))
print(ccode(x**2 + 3 * x))
print(pretty(x**2 / (x + 1), use_unicode=True))
'''),
    Program("sympy_competition_problem", r'''
from sympy import symbols, solve, Poly, expand, Rational, simplify

def main():
    # roots r1, r2, r3 of x^3 - 6x^2 + 11x - 6: find r1^3 + r2^3 + r3^3 via Newton sums
    x = symbols("x")
    p = Poly(x**3 - 6*x**2 + 11*x - 6, x)
    roots = solve(p.as_expr(), x)
    print("roots:", sorted(roots))
    print("sum of cubes:", sum(r**3 for r in roots))
    # how many integers n in [1, 1000] make n^2 + 3n + 2 divisible by 6?
    count = sum(1 for n in range(1, 1001) if (n * n + 3 * n + 2) % 6 == 0)
    print("count:", count)
    # the remainder of x^100 divided by x^2 - 3x + 2
    q, r = (Poly(x**100, x)).div(Poly(x**2 - 3*x + 2, x))
    print("remainder:", r.as_expr())
    # a^2 + b^2 given a + b = 7, ab = 10
    s, p = symbols("s p")
    print("a^2+b^2:", ((s**2 - 2*p)).subs({s: 7, p: 10}))

if __name__ == "__main__":
    main()
'''),
    Program("sympy_singular_matrix", r'''
from sympy import Matrix, symbols

k = symbols("k")
M = Matrix([[1, 2, k], [0, 1, 3], [2, 4, 6]])
print("det:", M.det())
print("singular when k =", [v for v in [1, 2, 3, 4] if M.subs(k, v).det() == 0])
print(M.subs(k, 3).inv())
'''),
]

MPMATH = [
    Program("mpmath_constants", r'''
from mpmath import mp, pi, e, sqrt, zeta, catalan, euler, phi, nstr

mp.dps = 50
print("pi =", pi)
print("e  =", e)
print("sqrt(2) =", sqrt(2))
print("zeta(3) =", zeta(3))
print("catalan =", nstr(catalan, 30))
print("euler gamma =", nstr(euler, 30))
print("golden ratio =", nstr(phi, 30))
mp.dps = 15
print("back to 15 digits:", pi)
'''),
    Program("mpmath_quad_findroot", r'''
from mpmath import mp, quad, findroot, exp, sin, cos, inf, log, pi, nstr, diff, sqrt

mp.dps = 30
print(nstr(quad(lambda x: exp(-x**2), [-inf, inf]), 25))
print(nstr(quad(lambda x: log(x) / (1 + x**2), [0, 1]), 25))
print(nstr(quad(lambda x, y: exp(-x - y), [0, inf], [0, inf]), 20))
print(nstr(findroot(lambda x: cos(x) - x, 0.7), 25))
print(nstr(findroot(lambda x: x**5 - x - 1, 1.2), 25))
print([nstr(v, 15) for v in findroot([lambda x, y: x**2 + y**2 - 4, lambda x, y: x - y], (1, 1))])
print(nstr(diff(lambda x: sin(x) * exp(x), pi / 4), 20))
'''),
    Program("mpmath_special_values", r'''
from mpmath import mp, gamma, polylog, hyp2f1, besselj, lambertw, erf, nstr, mpf, zetazero, bernoulli

mp.dps = 25
print("gamma(1/3) =", nstr(gamma(mpf(1) / 3), 20))
print("Li2(1/2) =", nstr(polylog(2, 0.5), 20))
print("2F1(1,1;2;1/2) =", nstr(hyp2f1(1, 1, 2, 0.5), 20))
print("J1(3) =", nstr(besselj(1, 3), 20))
print("W(1) =", nstr(lambertw(1).real, 20))
print("erf(1) =", nstr(erf(1), 20))
print("first zeta zero =", nstr(zetazero(1).imag, 20))
print("B_20 =", bernoulli(20))
'''),
    Program("mpmath_stdin_precision", r'''
import sys
from mpmath import mp, sqrt, mpf, nstr, log, exp

for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    digits, value = int(parts[0]), parts[1]
    mp.dps = digits + 5
    v = mpf(value)
    print(f"sqrt({value}) ~ {nstr(sqrt(v), digits)}")
    print(f"ln({value}) ~ {nstr(log(v), digits)}")
    print(f"exp(sqrt({value})) ~ {nstr(exp(sqrt(v)), digits)}")
''', stdin="20 2\n40 10\n10 0.5\n"),
    Program("mpmath_matrix_interval", r'''
from mpmath import mp, matrix, lu_solve, det, inverse, iv, mpf, nstr, hilbert

mp.dps = 30
H = hilbert(5)
print("det(H5) =", nstr(det(H), 20))
b = matrix([1, 1, 1, 1, 1])
x = lu_solve(H, b)
print("solution:", [nstr(v, 12) for v in x])
Hi = inverse(H)
print("inverse row 0:", [nstr(v, 10) for v in Hi[0, :]])
iv.dps = 15
r = iv.mpf([1, 2]) * iv.mpf([3, 4]) + iv.mpf(1) / 3
print("interval:", r)
'''),
]

GMPY2 = [
    Program("gmpy2_big_primes", r'''
import gmpy2
from gmpy2 import mpz

n = mpz(2) ** 127 - 1
print("M127 prime:", gmpy2.is_prime(n))
print("next prime after 10^30:", gmpy2.next_prime(mpz(10) ** 30))
f = gmpy2.fac(50)
print("50! =", f)
print("digits of 1000!:", len(str(gmpy2.fac(1000))))
print("fib(300) =", gmpy2.fib(300))
print("lucas(50) =", gmpy2.lucas(50))
print("C(100, 50) =", gmpy2.comb(100, 50))
print("gcd, lcm:", gmpy2.gcd(2**40 - 1, 2**30 - 1), gmpy2.lcm(12, 18))
print("popcount(2^64-1):", gmpy2.popcount(mpz(2) ** 64 - 1))
'''),
    Program("gmpy2_roots_modular", r'''
import gmpy2
from gmpy2 import mpz

N = mpz(10) ** 40 + 12345
r, exact = gmpy2.iroot(N, 3)
print("cube root:", r, "exact:", exact)
print("isqrt:", gmpy2.isqrt(N), "is_square:", gmpy2.is_square(N))
print("isqrt_rem(99):", gmpy2.isqrt_rem(99))
print("powmod:", gmpy2.powmod(3, 10**18, 10**9 + 7))
print("invert(7, 40):", gmpy2.invert(7, 40))
print("jacobi(1001, 9907):", gmpy2.jacobi(1001, 9907))
g, s, t = gmpy2.gcdext(240, 46)
print("gcdext:", g, s, t, "check:", 240 * s + 46 * t == g)
print("bit_length:", N.bit_length(), "num_digits(2):", gmpy2.num_digits(N, 2))
'''),
    Program("gmpy2_rationals_floats", r'''
import gmpy2
from gmpy2 import mpq, mpfr

h = sum(mpq(1, k) for k in range(1, 31))
print("H_30 =", h)
print("numerator digits:", len(str(h.numerator)))
gmpy2.get_context().precision = 200
print("sqrt(2) =", format(gmpy2.sqrt(mpfr(2)), ".50f"))
print("pi =", format(gmpy2.const_pi(), ".50f"))
print("exp(1) =", format(gmpy2.exp(1), ".40f"))
print("log2(10) =", format(gmpy2.log2(10), ".40f"))
gmpy2.get_context().precision = 53
print("1/3 at 53 bits =", mpfr(1) / 3)
'''),
    Program("gmpy2_stdin_crt", r'''
import sys
import gmpy2
from gmpy2 import mpz

lines = sys.stdin.read().strip().splitlines()
pairs = [tuple(map(int, ln.split())) for ln in lines[1:1 + int(lines[0])]]
x, m = mpz(0), mpz(1)
for r, mod in pairs:
    g = gmpy2.gcd(m, mod)
    if (r - x) % g:
        print("no solution")
        sys.exit(1)
    step = ((r - x) // g) * gmpy2.invert(m // g, mod // g) % (mod // g)
    x += m * step
    m = gmpy2.lcm(m, mod)
    x %= m
print("x =", x, "mod", m)
for r, mod in pairs:
    print(f"  x mod {mod} = {x % mod} (want {r})")
''', stdin="4\n2 3\n3 5\n2 7\n5 11\n"),
    Program("gmpy2_invert_fails", r'''
import gmpy2

for a, m in [(3, 11), (10, 17), (6, 15)]:
    print(f"inverse of {a} mod {m} =", gmpy2.invert(a, m))
'''),
]

NETWORKX = [
    Program("networkx_shortest_paths_stdin", r'''
import sys
import networkx as nx

G = nx.Graph()
lines = sys.stdin.read().strip().splitlines()
src, dst = lines[0].split()
for ln in lines[1:]:
    u, v, w = ln.split()
    G.add_edge(u, v, weight=float(w))
print("nodes:", G.number_of_nodes(), "edges:", G.number_of_edges())
path = nx.dijkstra_path(G, src, dst)
print("dijkstra:", " -> ".join(path), "cost:", nx.dijkstra_path_length(G, src, dst))
print("fewest hops:", nx.shortest_path(G, src, dst))
lengths = nx.single_source_dijkstra_path_length(G, src)
for node in sorted(lengths):
    print(f"  {node}: {lengths[node]}")
''', stdin="A F\nA B 4\nA C 2\nB C 1\nB D 5\nC D 8\nC E 10\nD E 2\nD F 6\nE F 2\n"),
    Program("networkx_mst_components", r'''
import networkx as nx

G = nx.Graph()
G.add_weighted_edges_from([(1, 2, 7), (1, 4, 5), (2, 3, 8), (2, 4, 9), (2, 5, 7), (3, 5, 5),
                           (4, 5, 15), (4, 6, 6), (5, 6, 8), (5, 7, 9), (6, 7, 11), (8, 9, 1)])
T = nx.minimum_spanning_tree(G, algorithm="kruskal")
edges = sorted((min(u, v), max(u, v), d["weight"]) for u, v, d in T.edges(data=True))
print("mst edges:", edges)
print("mst weight:", sum(w for _, _, w in edges))
print("components:", [sorted(c) for c in sorted(nx.connected_components(G), key=min)])
print("bridges:", sorted(tuple(sorted(e)) for e in nx.bridges(G)))
print("articulation points:", sorted(nx.articulation_points(G)))
print("degree histogram:", nx.degree_histogram(G))
'''),
    Program("networkx_max_flow", r'''
import networkx as nx

G = nx.DiGraph()
for u, v, c in [("s", "a", 10), ("s", "b", 5), ("a", "b", 15), ("a", "c", 9), ("b", "d", 10),
                ("c", "d", 15), ("c", "t", 10), ("d", "t", 10), ("d", "a", 6)]:
    G.add_edge(u, v, capacity=c)
value, flow = nx.maximum_flow(G, "s", "t")
print("max flow:", value)
for u in sorted(flow):
    for v in sorted(flow[u]):
        if flow[u][v]:
            print(f"  {u}->{v}: {flow[u][v]}")
cut, (S, T) = nx.minimum_cut(G, "s", "t")
print("min cut:", cut, "S side:", sorted(S), "T side:", sorted(T))
'''),
    Program("networkx_topological_dag", r'''
import networkx as nx

deps = {"app": ["web", "db"], "web": ["http", "templates"], "db": ["driver"],
        "templates": ["markup"], "http": ["sockets"], "driver": ["sockets"],
        "markup": [], "sockets": []}
G = nx.DiGraph()
for pkg, reqs in deps.items():
    G.add_node(pkg)
    for r in reqs:
        G.add_edge(r, pkg)
print("is DAG:", nx.is_directed_acyclic_graph(G))
print("lexicographic order:", list(nx.lexicographical_topological_sort(G)))
print("longest chain:", nx.dag_longest_path(G))
print("ancestors of app:", sorted(nx.ancestors(G, "app")))
gens = [sorted(g) for g in nx.topological_generations(G)]
print("build waves:", gens)
G.add_edge("app", "sockets")
print("cycle after bad edge:", nx.find_cycle(G, "app"))
'''),
    Program("networkx_centrality", r'''
import networkx as nx

G = nx.karate_club_graph()
print("nodes:", G.number_of_nodes(), "edges:", G.number_of_edges())
pr = nx.pagerank(G, alpha=0.85, tol=1e-12)
top = sorted(pr, key=lambda n: (-pr[n], n))[:5]
print("pagerank top:", [(n, round(pr[n], 5)) for n in top])
bc = nx.betweenness_centrality(G)
print("betweenness top:", [(n, round(bc[n], 5)) for n in sorted(bc, key=lambda n: (-bc[n], n))[:5]])
print("clustering avg:", round(nx.average_clustering(G), 6))
print("diameter:", nx.diameter(G), "radius:", nx.radius(G))
print("triangles total:", sum(nx.triangles(G).values()) // 3)
print("club sizes:", sorted((c, sum(1 for n in G if G.nodes[n]["club"] == c)) for c in ("Mr. Hi", "Officer")))
'''),
    Program("networkx_bipartite_matching", r'''
import networkx as nx
from networkx.algorithms import bipartite

workers = ["w1", "w2", "w3", "w4"]
jobs = ["j1", "j2", "j3", "j4"]
can = {"w1": ["j1", "j2"], "w2": ["j1"], "w3": ["j2", "j3", "j4"], "w4": ["j3"]}
G = nx.Graph()
G.add_nodes_from(workers, bipartite=0)
G.add_nodes_from(jobs, bipartite=1)
G.add_edges_from((w, j) for w, js in can.items() for j in js)
m = bipartite.hopcroft_karp_matching(G, top_nodes=workers)
print("matching:", sorted((w, m[w]) for w in workers if w in m))
cost = {("w1", "j1"): 4, ("w1", "j2"): 2, ("w2", "j1"): 3, ("w3", "j2"): 5, ("w3", "j3"): 1,
        ("w3", "j4"): 6, ("w4", "j3"): 2}
H = nx.Graph()
for (w, j), c in cost.items():
    H.add_edge(w, j, weight=c)
mm = nx.max_weight_matching(H, maxcardinality=True)
pairs = sorted(tuple(sorted(e)) for e in mm)
print("max weight matching:", pairs, "total:", sum(H[u][v]["weight"] for u, v in pairs))
print("grid graph 3x3 is bipartite:", nx.is_bipartite(nx.grid_2d_graph(3, 3)))
print("cycle 5 is bipartite:", nx.is_bipartite(nx.cycle_graph(5)))
'''),
    Program("networkx_no_path", r'''
import networkx as nx

G = nx.DiGraph([("a", "b"), ("b", "c"), ("d", "e")])
print("a->c:", nx.shortest_path(G, "a", "c"))
print("reachable from a:", sorted(nx.descendants(G, "a")))
print("a->e:", nx.shortest_path(G, "a", "e"))
'''),
    Program("networkx_grid_exit", r'''
import sys
import networkx as nx

maze = [
    "S.#.....",
    ".##.###.",
    "....#...",
    "#.#...#.",
    "..#.#.#E",
]
G = nx.grid_2d_graph(len(maze), len(maze[0]))
G.remove_nodes_from([(r, c) for r, row in enumerate(maze) for c, ch in enumerate(row) if ch == "#"])
start = next((r, c) for r, row in enumerate(maze) for c, ch in enumerate(row) if ch == "S")
end = next((r, c) for r, row in enumerate(maze) for c, ch in enumerate(row) if ch == "E")
length = nx.shortest_path_length(G, start, end)
print("shortest maze path:", length, "steps")
print("number of shortest paths:", sum(1 for _ in nx.all_shortest_paths(G, start, end)))
if length >= 10:
    print(f"path too long: {length} >= 10", file=sys.stderr)
    sys.exit(4)
print("ok")
'''),
]

NUMBA = [
    Program("numba_prime_sieve", r'''
import numpy as np
from numba import njit

@njit(cache=False)
def sieve(n):
    is_p = np.ones(n + 1, dtype=np.bool_)
    is_p[:2] = False
    i = 2
    while i * i <= n:
        if is_p[i]:
            for j in range(i * i, n + 1, i):
                is_p[j] = False
        i += 1
    return np.nonzero(is_p)[0]

primes = sieve(1_000_000)
print("primes below 10^6:", len(primes))
print("last five:", primes[-5:].tolist())
gaps = np.diff(primes)
print("max gap:", int(gaps.max()), "after", int(primes[gaps.argmax()]))
print("twin primes:", int(np.sum(gaps == 2)))
'''),
    Program("numba_mandelbrot", r'''
import numpy as np
from numba import njit

@njit
def escape(c, max_iter):
    z = 0j
    for i in range(max_iter):
        z = z * z + c
        if z.real * z.real + z.imag * z.imag > 4.0:
            return i
    return max_iter

@njit
def render(w, h, max_iter):
    out = np.empty((h, w), dtype=np.int64)
    for y in range(h):
        for x in range(w):
            c = complex(-2.0 + 3.0 * x / w, -1.2 + 2.4 * y / h)
            out[y, x] = escape(c, max_iter)
    return out

img = render(60, 20, 50)
chars = " .:-=+*#%@"
for row in img:
    print("".join(chars[min(v * len(chars) // 51, 9)] for v in row))
print("inside points:", int((img == 50).sum()))
'''),
    Program("numba_vectorize_ufunc", r'''
import math
import numpy as np
from numba import vectorize, njit, float64

@vectorize([float64(float64, float64)])
def rel_diff(a, b):
    m = max(abs(a), abs(b))
    return 0.0 if m == 0 else abs(a - b) / m

@njit
def logistic_map(r, x0, n):
    x = x0
    out = np.empty(n)
    for i in range(n):
        x = r * x * (1.0 - x)
        out[i] = x
    return out

a = np.array([1.0, 2.0, 0.0, -3.0, 10.0])
b = np.array([1.5, 2.0, 0.0, 3.0, 9.0])
print("rel diff:", np.round(rel_diff(a, b), 6).tolist())
for r in (2.8, 3.2, 3.5):
    tail = logistic_map(r, 0.2, 1000)[-8:]
    print(f"r={r}: attractor {sorted(set(np.round(tail, 4).tolist()))}")
'''),
    Program("numba_dp_knapsack", r'''
import numpy as np
from numba import njit

@njit
def knapsack(weights, values, cap):
    n = len(weights)
    dp = np.zeros((n + 1, cap + 1), dtype=np.int64)
    for i in range(1, n + 1):
        w, v = weights[i - 1], values[i - 1]
        for c in range(cap + 1):
            dp[i, c] = dp[i - 1, c]
            if w <= c and dp[i - 1, c - w] + v > dp[i, c]:
                dp[i, c] = dp[i - 1, c - w] + v
    chosen = []
    c = cap
    for i in range(n, 0, -1):
        if dp[i, c] != dp[i - 1, c]:
            chosen.append(i - 1)
            c -= weights[i - 1]
    return dp[n, cap], chosen[::-1]

@njit
def lcs(a, b):
    dp = np.zeros((len(a) + 1, len(b) + 1), dtype=np.int64)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            dp[i, j] = dp[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(dp[i - 1, j], dp[i, j - 1])
    return dp[len(a), len(b)]

rng = np.random.default_rng(8)
w = rng.integers(5, 40, 25)
v = rng.integers(10, 100, 25)
best, items = knapsack(w, v, 150)
print("best value:", best)
print("items:", list(items), "weight:", int(w[np.array(items)].sum()))
x = rng.integers(0, 4, 300)
y = rng.integers(0, 4, 280)
print("lcs length:", lcs(x, y))
'''),
    Program("numba_typing_error", r'''
import numpy as np
from numba import njit

@njit
def total_length(words):
    n = 0
    for w in words:
        n += len(w)
    return n + " characters"

print(total_length(["alpha", "beta", "gamma"]))
'''),
]

TORCH = [
    Program("torch_tensor_basics", r'''
import torch

torch.manual_seed(0)
a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
b = torch.linspace(0, 1, 4)
print("shape:", tuple(a.shape), "dtype:", a.dtype)
print("a @ b:", [round(v, 4) for v in (a @ b).tolist()])
print("col means:", [round(v, 4) for v in a.mean(dim=0).tolist()])
print("row max:", a.max(dim=1).values.tolist())
print("transpose sum:", a.t().sum().item())
x = torch.randn(5)
print("randn:", [f"{v:.4f}" for v in x.tolist()])
print("sorted idx:", torch.argsort(x).tolist())
print("cumsum:", torch.cumsum(torch.tensor([1, 2, 3, 4]), 0).tolist())
print("where:", torch.where(x > 0, x, torch.zeros_like(x)).gt(0).sum().item())
'''),
    Program("torch_autograd", r'''
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x ** 3).sum() + (2 * x).prod()
y.backward()
print("y:", round(y.item(), 4))
print("dy/dx:", [round(v, 4) for v in x.grad.tolist()])
w = torch.tensor(0.5, requires_grad=True)
f = torch.sin(w) * torch.exp(w)
(g,) = torch.autograd.grad(f, w, create_graph=True)
(h,) = torch.autograd.grad(g, w)
print(f"f={f.item():.6f} f'={g.item():.6f} f''={h.item():.6f}")
A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
v = torch.tensor([1.0, -1.0])
q = v @ A @ v
q.backward()
print("grad of quadratic form:", A.grad.tolist())
'''),
    Program("torch_linear_regression", r'''
import torch

torch.manual_seed(0)
X = torch.rand(100, 2) * 10
true_w = torch.tensor([[1.5], [-0.7]])
y = X @ true_w + 3.0 + 0.1 * torch.randn(100, 1)
model = torch.nn.Linear(2, 1)
loss_fn = torch.nn.MSELoss()
lr = 0.01
for epoch in range(300):
    model.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    if epoch % 100 == 0:
        print(f"epoch {epoch}: loss={loss.item():.3f}")
print("final loss < 0.5:", loss.item() < 0.5)
sol = torch.linalg.lstsq(torch.cat([X, torch.ones(100, 1)], 1), y).solution
print("closed form:", [round(v, 2) for v in sol.flatten().tolist()])
'''),
    Program("torch_xor_mlp", r'''
import torch
from torch import nn

def main():
    torch.manual_seed(0)
    X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = torch.tensor([[0.0], [1.0], [1.0], [0.0]])
    net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    loss_fn = nn.BCEWithLogitsLoss()
    for step in range(600):
        net.zero_grad()
        loss = loss_fn(net(X), y)
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= 0.5 * p.grad
        if step % 200 == 0:
            print(f"step {step}: loss={loss.item():.4f}")
    with torch.no_grad():
        pred = torch.sigmoid(net(X))
    print("loss < 0.05:", loss.item() < 0.05)
    print("predictions:", (pred > 0.5).int().flatten().tolist())
    print("parameters:", sum(p.numel() for p in net.parameters()))

if __name__ == "__main__":
    main()
'''),
    Program("torch_softmax_ce", r'''
import torch
import torch.nn.functional as F

logits = torch.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3], [1.2, 0.2, 3.1], [0.0, 0.0, 0.0]])
target = torch.tensor([0, 1, 2, 1])
probs = F.softmax(logits, dim=1)
for row in probs.tolist():
    print(" ".join(f"{p:.4f}" for p in row))
print("cross entropy:", f"{F.cross_entropy(logits, target).item():.5f}")
print("nll manual:", f"{-torch.log(probs[torch.arange(4), target]).mean().item():.5f}")
print("accuracy:", (logits.argmax(1) == target).float().mean().item())
onehot = F.one_hot(target, 3)
print("one hot:", onehot.tolist())
print("label smoothing:", f"{F.cross_entropy(logits, target, label_smoothing=0.1).item():.5f}")
'''),
    Program("torch_shape_mismatch", r'''
import torch

torch.manual_seed(0)
layer = torch.nn.Linear(4, 3)
batch = torch.ones(5, 6)
print("input:", tuple(batch.shape), "weight:", tuple(layer.weight.shape))
out = layer(batch)
print(out)
'''),
]

STATSMODELS = [
    Program("statsmodels_ols", r'''
import numpy as np
from statsmodels.regression.linear_model import OLS
from statsmodels.tools import add_constant

rng = np.random.default_rng(0)
n = 120
x1 = rng.uniform(0, 10, n)
x2 = rng.normal(0, 1, n)
y = 1.5 + 2.0 * x1 - 0.8 * x2 + rng.normal(0, 1.0, n)
X = add_constant(np.column_stack([x1, x2]))
res = OLS(y, X).fit()
print("params:", np.round(res.params, 4).tolist())
print("bse:", np.round(res.bse, 4).tolist())
print("t:", np.round(res.tvalues, 3).tolist())
print(f"r2={res.rsquared:.5f} adj={res.rsquared_adj:.5f}")
print(f"F={res.fvalue:.3f} aic={res.aic:.3f} bic={res.bic:.3f}")
print("95% CI x1:", np.round(res.conf_int()[1], 4).tolist())
'''),
    Program("statsmodels_logit", r'''
import numpy as np
from statsmodels.discrete.discrete_model import Logit
from statsmodels.tools import add_constant

rng = np.random.default_rng(1)
n = 300
hours = rng.uniform(0, 10, n)
prior = rng.integers(0, 2, n)
p = 1 / (1 + np.exp(-(-4 + 0.8 * hours + 1.0 * prior)))
passed = (rng.uniform(size=n) < p).astype(int)
X = add_constant(np.column_stack([hours, prior]))
res = Logit(passed, X).fit(disp=0)
print("converged:", res.mle_retvals["converged"])
print("params:", np.round(res.params, 4).tolist())
print("odds ratios:", np.round(np.exp(res.params), 4).tolist())
print(f"pseudo r2={res.prsquared:.5f} llf={res.llf:.4f}")
pred = res.predict(np.array([[1, 5.0, 0], [1, 5.0, 1]]))
print("P(pass | 5h):", np.round(pred, 4).tolist())
print("accuracy:", round(float(((res.predict(X) > 0.5) == passed).mean()), 4))
'''),
    Program("statsmodels_adfuller_acf", r'''
import numpy as np
from statsmodels.tsa.stattools import adfuller, acf, pacf

rng = np.random.default_rng(2)
e = rng.normal(size=400)
ar = np.zeros(400)
for t in range(1, 400):
    ar[t] = 0.6 * ar[t - 1] + e[t]
walk = np.cumsum(e)
for name, s in (("ar1", ar), ("random walk", walk)):
    stat, p, lags, nobs, crit, _ = adfuller(s, autolag="AIC", result_object=False)
    print(f"{name}: adf={stat:.4f} p={p:.4f} lags={lags} nobs={nobs} crit5%={crit['5%']:.4f}")
print("acf ar1:", np.round(acf(ar, nlags=5), 4).tolist())
print("pacf ar1:", np.round(pacf(ar, nlags=3), 4).tolist())
'''),
    Program("statsmodels_autoreg", r'''
import numpy as np
from statsmodels.tsa.ar_model import AutoReg

rng = np.random.default_rng(3)
n = 300
y = np.zeros(n)
for t in range(2, n):
    y[t] = 0.5 * y[t - 1] - 0.3 * y[t - 2] + rng.normal()
res = AutoReg(y, lags=2).fit()
print("params:", np.round(res.params, 4).tolist())
print("sigma2:", round(float(res.sigma2), 4))
print("aic:", round(float(res.aic), 4))
fc = res.predict(start=n, end=n + 4)
print("forecast:", np.round(fc, 4).tolist())
'''),
    Program("statsmodels_tests_stdin", r'''
import sys
import numpy as np
from statsmodels.stats.proportion import proportions_ztest, proportion_confint
from statsmodels.stats.weightstats import ttest_ind
from statsmodels.stats.multitest import multipletests

lines = sys.stdin.read().split("\n")
succ = list(map(int, lines[0].split()))
nobs = list(map(int, lines[1].split()))
z, p = proportions_ztest(succ, nobs)
print(f"two-proportion z={z:.4f} p={p:.5f}")
for s, n in zip(succ, nobs):
    lo, hi = proportion_confint(s, n, method="wilson")
    print(f"  {s}/{n}: wilson CI [{lo:.4f}, {hi:.4f}]")
a = np.array(list(map(float, lines[2].split())))
b = np.array(list(map(float, lines[3].split())))
t, pt, df = ttest_ind(a, b)
print(f"t={t:.4f} p={pt:.5f} df={df:.1f}")
pvals = [0.001, 0.01, 0.02, 0.035, 0.2]
rej, adj, _, _ = multipletests(pvals, method="fdr_bh")
print("BH reject:", rej.tolist(), "adjusted:", np.round(adj, 4).tolist())
''', stdin="45 30\n120 110\n5.1 4.9 5.6 5.8 6.0 5.3 5.5\n4.8 4.7 5.0 5.2 4.6 4.9 5.1\n"),
    Program("statsmodels_anova_formula", r'''
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

rng = np.random.default_rng(4)
groups = np.repeat(["a", "b", "c"], 20)
effect = {"a": 10.0, "b": 12.0, "c": 11.0}
df = pd.DataFrame({"group": groups, "dose": np.tile(np.arange(20), 3)})
df["y"] = [effect[g] for g in groups] + 0.1 * df["dose"] + rng.normal(0, 1, 60)
model = smf.ols("y ~ C(group) + dose", data=df).fit()
print("params:")
for name, v in model.params.round(4).items():
    print(f"  {name}: {v}")
table = anova_lm(model, typ=2)
for name, row in table.iterrows():
    pr = row["PR(>F)"]
    print(f"{name:10s} df={row['df']:.0f} F={row['F']:.4f} p={pr:.6f}" if not np.isnan(pr) else f"{name:10s} df={row['df']:.0f}")
'''),
]

PROGRAMS = NUMPY + SCIPY + SYMPY + MPMATH + GMPY2 + NETWORKX + NUMBA + TORCH + STATSMODELS
