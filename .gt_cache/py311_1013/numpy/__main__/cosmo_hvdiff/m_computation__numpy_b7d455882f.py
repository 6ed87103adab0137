import numbers
from typing import Tuple

import numpy as np
from gt4py.cartesian.gtc import ufuncs
from gt4py.cartesian.utils import Field


def run(*, f_t, f_mask, f_kv, f_tnew, s_dt, s_rdz2, s_hdc, _domain_, _origin_):

    # --- begin domain boundary shortcuts ---
    _di_, _dj_, _dk_ = 0, 0, 0
    _dI_, _dJ_, _dK_ = _domain_
    __k_mask = np.empty(_domain_, dtype=int)
    __k_mask[:, :] = np.arange(_dK_, dtype=int)
    # --- end domain padding ---

    f_t = Field(f_t, _origin_["f_t"], (True, True, True))
    f_mask = Field(f_mask, _origin_["f_mask"], (True, True, True))
    f_kv = Field(f_kv, _origin_["f_kv"], (True, True, True))
    f_tnew = Field(f_tnew, _origin_["f_tnew"], (True, True, True))

    f_lap = Field.empty((_dI_ + 2, _dJ_ + 2, _dK_), np.float64, (1, 1, 0), (True, True, True))
    f_flx = Field.empty((_dI_ + 1, _dJ_ + 0, _dK_), np.float64, (1, 0, 0), (True, True, True))
    f_fly = Field.empty((_dI_ + 0, _dJ_ + 1, _dK_), np.float64, (0, 1, 0), (True, True, True))
    f_th = Field.empty((_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True))
    f_cp = Field.empty((_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True))
    f_dp = Field.empty((_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True))
    l_flx_d_gen_0 = Field.empty(
        (_dI_ + 1, _dJ_ + 0, _dK_), np.float64, (1, 0, 0), (True, True, True)
    )
    l_fly_d_gen_0 = Field.empty(
        (_dI_ + 0, _dJ_ + 1, _dK_), np.float64, (0, 1, 0), (True, True, True)
    )
    l_cp_c_gen_0 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_cp_a_gen_0 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_cp_c_gen_1 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_dp_c_gen_0 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_dp_a_gen_0 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_dp_c_gen_1 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )
    l_dp_a_gen_1 = Field.empty(
        (_dI_ + 0, _dJ_ + 0, _dK_), np.float64, (0, 0, 0), (True, True, True)
    )

    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):

        # --- begin vertical block ---
        k, K = _dk_, _dK_

        # --- begin horizontal block --
        i, I = _di_ - 1, _dI_ + 1
        j, J = _dj_ - 1, _dJ_ + 1

        f_lap[i:I, j:J, k:K] = (
            (
                (((-(np.float64(4.0))) * f_t[i:I, j:J, k:K]) + f_t[i - 1 : I - 1, j:J, k:K])
                + f_t[i + 1 : I + 1, j:J, k:K]
            )
            + f_t[i:I, j - 1 : J - 1, k:K]
        ) + f_t[i:I, j + 1 : J + 1, k:K]
        # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dK_

        # --- begin horizontal block --
        i, I = _di_ - 1, _dI_ + 0
        j, J = _dj_ - 0, _dJ_ + 0

        l_flx_d_gen_0[i:I, j:J, k:K] = f_lap[i + 1 : I + 1, j:J, k:K] - f_lap[i:I, j:J, k:K]
        f_flx[i:I, j:J, k:K] = np.where(
            (
                (l_flx_d_gen_0[i:I, j:J, k:K] * (f_t[i + 1 : I + 1, j:J, k:K] - f_t[i:I, j:J, k:K]))
                > np.float64(0.0)
            ),
            np.float64(0.0),
            l_flx_d_gen_0[i:I, j:J, k:K],
        )
        # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dK_

        # --- begin horizontal block --
        i, I = _di_ - 0, _dI_ + 0
        j, J = _dj_ - 1, _dJ_ + 0

        l_fly_d_gen_0[i:I, j:J, k:K] = f_lap[i:I, j + 1 : J + 1, k:K] - f_lap[i:I, j:J, k:K]
        f_fly[i:I, j:J, k:K] = np.where(
            (
                (l_fly_d_gen_0[i:I, j:J, k:K] * (f_t[i:I, j + 1 : J + 1, k:K] - f_t[i:I, j:J, k:K]))
                > np.float64(0.0)
            ),
            np.float64(0.0),
            l_fly_d_gen_0[i:I, j:J, k:K],
        )
        # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dK_

        # --- begin horizontal block --
        i, I = _di_ - 0, _dI_ + 0
        j, J = _dj_ - 0, _dJ_ + 0

        f_th[i:I, j:J, k:K] = f_t[i:I, j:J, k:K] - (
            (s_hdc * f_mask[i:I, j:J, k:K])
            * (
                ((f_flx[i:I, j:J, k:K] - f_flx[i - 1 : I - 1, j:J, k:K]) + f_fly[i:I, j:J, k:K])
                - f_fly[i:I, j - 1 : J - 1, k:K]
            )
        )
        # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dk_ + 1
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            l_cp_c_gen_0[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ + 1 : k_ + 2]
            f_cp[i:I, j:J, k_ : k_ + 1] = (-(l_cp_c_gen_0[i:I, j:J, k_ : k_ + 1])) / (
                np.float64(1.0) + l_cp_c_gen_0[i:I, j:J, k_ : k_ + 1]
            )
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_ + 1, _dK_ - 1
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            l_cp_a_gen_0[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ : k_ + 1]
            l_cp_c_gen_1[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ + 1 : k_ + 2]
            f_cp[i:I, j:J, k_ : k_ + 1] = (-(l_cp_c_gen_1[i:I, j:J, k_ : k_ + 1])) / (
                (
                    (np.float64(1.0) + l_cp_a_gen_0[i:I, j:J, k_ : k_ + 1])
                    + l_cp_c_gen_1[i:I, j:J, k_ : k_ + 1]
                )
                + (l_cp_a_gen_0[i:I, j:J, k_ : k_ + 1] * f_cp[i:I, j:J, k_ - 1 : k_])
            )
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dK_ - 1, _dK_
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            f_cp[i:I, j:J, k_ : k_ + 1] = np.float64(0.0)
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dk_ + 1
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            l_dp_c_gen_0[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ + 1 : k_ + 2]
            f_dp[i:I, j:J, k_ : k_ + 1] = f_th[i:I, j:J, k_ : k_ + 1] / (
                np.float64(1.0) + l_dp_c_gen_0[i:I, j:J, k_ : k_ + 1]
            )
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_ + 1, _dK_ - 1
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            l_dp_a_gen_0[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ : k_ + 1]
            l_dp_c_gen_1[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ + 1 : k_ + 2]
            f_dp[i:I, j:J, k_ : k_ + 1] = (
                f_th[i:I, j:J, k_ : k_ + 1]
                + (l_dp_a_gen_0[i:I, j:J, k_ : k_ + 1] * f_dp[i:I, j:J, k_ - 1 : k_])
            ) / (
                (
                    (np.float64(1.0) + l_dp_a_gen_0[i:I, j:J, k_ : k_ + 1])
                    + l_dp_c_gen_1[i:I, j:J, k_ : k_ + 1]
                )
                + (l_dp_a_gen_0[i:I, j:J, k_ : k_ + 1] * f_cp[i:I, j:J, k_ - 1 : k_])
            )
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dK_ - 1, _dK_
        for k_ in range(k, K):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            l_dp_a_gen_1[i:I, j:J, k_ : k_ + 1] = (s_dt * s_rdz2) * f_kv[i:I, j:J, k_ : k_ + 1]
            f_dp[i:I, j:J, k_ : k_ + 1] = (
                f_th[i:I, j:J, k_ : k_ + 1]
                + (l_dp_a_gen_1[i:I, j:J, k_ : k_ + 1] * f_dp[i:I, j:J, k_ - 1 : k_])
            ) / (
                (np.float64(1.0) + l_dp_a_gen_1[i:I, j:J, k_ : k_ + 1])
                + (l_dp_a_gen_1[i:I, j:J, k_ : k_ + 1] * f_cp[i:I, j:J, k_ - 1 : k_])
            )
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dK_ - 1, _dK_
        for k_ in range(K - 1, k - 1, -1):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            f_tnew[i:I, j:J, k_ : k_ + 1] = f_dp[i:I, j:J, k_ : k_ + 1]
            # --- end horizontal block --

        # --- end vertical block ---

        # --- begin vertical block ---
        k, K = _dk_, _dK_ - 1
        for k_ in range(K - 1, k - 1, -1):

            # --- begin horizontal block --
            i, I = _di_ - 0, _dI_ + 0
            j, J = _dj_ - 0, _dJ_ + 0

            f_tnew[i:I, j:J, k_ : k_ + 1] = f_dp[i:I, j:J, k_ : k_ + 1] - (
                f_cp[i:I, j:J, k_ : k_ + 1] * f_tnew[i:I, j:J, k_ + 1 : k_ + 2]
            )
            # --- end horizontal block --

        # --- end vertical block ---
