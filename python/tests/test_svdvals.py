"""The band reduction examples/bdfac.lpk and lpk.svdvals against NumPy:
the band result is exactly zero outside its band and has A's singular
values to 1e-12 relative to σ₁, for grids of 1 to 7 tiles with edge tiles;
lpk.svdvals on matrices with known singular values (condition 1e10) and
non-square ones; bad arguments are clear errors."""

import numpy as np
import pytest

import lpk
from conftest import EXAMPLES


def rel_err(have, want):
    return np.max(np.abs(have - want)) / want[0]


def known_spectrum(n, cond, rng):
    """U diag(s) Vᵀ with s log-spaced from 1 down to 1/cond."""
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.logspace(0, -np.log10(cond), n)
    return np.ascontiguousarray((u * s) @ v.T), s


def test_the_package_copy_is_the_example():
    assert lpk._BDFAC_SOURCE == (EXAMPLES / "bdfac.lpk").read_text()


@pytest.mark.parametrize("tiles", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("edge", [0, 3])
def test_bdfac_gives_a_band_matrix_with_the_singular_values(tiles, edge):
    block = 5
    n = tiles * block - edge
    rng = np.random.default_rng(100 * tiles + edge)
    a = rng.standard_normal((n, n))
    out = lpk.run(lpk.load(EXAMPLES / "bdfac.lpk"), A=a, block=block, workers=2)
    b = out["B"]
    assert b.shape == (n, n)
    assert out.report["params"]["N"] == -(-n // block)
    assert out.report["tasks"] == tiles * (tiles + 1) * (4 * tiles - 1) // 6
    # Exactly zero below the diagonal and above the block-th superdiagonal.
    assert not np.tril(b, -1).any()
    assert not np.triu(b, block + 1).any()
    want = np.linalg.svd(a, compute_uv=False)
    assert rel_err(np.linalg.svd(b, compute_uv=False), want) <= 1e-12


def test_bdfac_verify_compares_the_singular_values():
    a = np.random.default_rng(7).standard_normal((23, 23))
    out = lpk.run(lpk.load(EXAMPLES / "bdfac.lpk"), A=a, block=4, verify=True)
    residual = out.report["residual"]
    assert residual["ok"] and residual["value"] <= 1e-13, residual


@pytest.mark.parametrize("finish", ["banded", "dense", "auto"])
def test_svdvals_of_a_known_spectrum_with_condition_1e10(finish):
    a, s = known_spectrum(90, 1e10, np.random.default_rng(3))
    got = lpk.svdvals(a, block=8, workers=2, finish=finish)
    assert got.shape == (90,)
    assert np.all(np.diff(got) <= 0), "largest first"
    assert rel_err(got, s) <= 1e-12
    assert rel_err(got, np.linalg.svd(a, compute_uv=False)) <= 1e-12


@pytest.mark.parametrize("shape", [(1, 1), (7, 7), (30, 17), (17, 30), (40, 40)])
@pytest.mark.parametrize("block", [3, 16, 64])
def test_svdvals_agrees_with_numpy(shape, block):
    a = np.random.default_rng(sum(shape) + block).standard_normal(shape)
    got = lpk.svdvals(a, block=block)
    want = np.linalg.svd(a, compute_uv=False)
    assert got.shape == want.shape
    assert rel_err(got, want) <= 1e-12


def test_svdvals_of_rank_deficient_and_zero_matrices():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((24, 3)) @ rng.standard_normal((3, 24))
    got = lpk.svdvals(a, block=5)
    want = np.linalg.svd(a, compute_uv=False)
    assert rel_err(got, want) <= 1e-12
    assert np.all(got[3:] <= 1e-13 * got[0])
    assert not lpk.svdvals(np.zeros((9, 9)), block=4).any()
    assert lpk.svdvals(np.zeros((0, 4))).shape == (0,)


def test_svdvals_refuses_bad_arguments():
    with pytest.raises(ValueError, match="2-D"):
        lpk.svdvals(np.ones(4))
    with pytest.raises(ValueError, match="NaN or an infinity"):
        lpk.svdvals(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="block must be a positive int"):
        lpk.svdvals(np.eye(3), block=0)
    with pytest.raises(ValueError, match="finish must be"):
        lpk.svdvals(np.eye(3), finish="fast")
