/* pg_special.h - the special functions C's math library lacks (digamma, trigamma,
 * erfinv, the modified Bessel functions I0 and I1), written once as PG_HD functions
 * so the CPU kernels (csrc/backends/cpu/cpu_math_unary.c) and the CUDA kernels
 * (csrc/backends/cuda/kernels/pg_math_unary.cuh) run the very same code.
 *
 * Each is computed in double; a float32 (or half) element is widened, computed and
 * rounded once, so float32 results are correctly rounded or within one ulp.
 * Accuracy in double: a few ulp (the series are summed to convergence, the
 * asymptotic expansions cut where their next term is below 1e-17 relative).
 * Special values follow PyTorch: digamma(0) = -inf (+inf at -0), digamma of a
 * negative integer is NaN, erfinv(+-1) = +-inf and NaN outside [-1, 1].
 * Plain C (and C++ for NVCC/NVRTC and the CPU emulation): math.h only. */
#ifndef PG_SPECIAL_H
#define PG_SPECIAL_H

#include <math.h>

#include "pg_hd.h"

#define PG_PI 3.14159265358979323846
#define PG_2_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi): d erf / dx at 0 */

/* digamma (psi): the log-derivative of the gamma function. Negative x by reflection,
 * then the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic
 * series ln x - 1/(2x) - sum B_2k / (2k x^2k). */
PG_HD double pg_digamma(double x)
{
    if (x == 0)
        return copysign(INFINITY, -x);
    double result = 0;
    if (x < 0) {
        if (x == floor(x))
            return NAN;
        /* psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so only x's fraction counts */
        double r = x - trunc(x);
        result = -PG_PI / tan(PG_PI * r);
        x = 1 - x;
    }
    if (x != x)
        return x;
    while (x < 10) {
        result -= 1 / x;
        x += 1;
    }
    if (x == INFINITY)
        return x;
    double y = 1 / (x * x);
    double z = y * (1.0 / 12 - y * (1.0 / 120 - y * (1.0 / 252 - y * (1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y / 12))))));
    return result + log(x) - 0.5 / x - z;
}

/* trigamma (polygamma(1, x)): reflection below 1/2, recurrence to x >= 10, then
 * 1/x + 1/(2x^2) + sum B_2k / x^(2k+1). */
PG_HD double pg_trigamma(double x)
{
    double sign = 1, result = 0;
    if (x != x)
        return x;
    if (x < 0.5) {
        if (x == floor(x))
            return INFINITY; /* a pole, as PyTorch's (+inf at 0 and the negative integers) */
        double s = sin(PG_PI * (x - trunc(x)));
        sign = -1;
        result = -PG_PI * PG_PI / (s * s);
        x = 1 - x;
    }
    while (x < 10) {
        result += 1 / (x * x);
        x += 1;
    }
    if (x == INFINITY)
        return sign * result;
    double ixx = 1 / (x * x);
    double tail = 1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42 - ixx * (1.0 / 30 - ixx * (5.0 / 66 - ixx * (691.0 / 2730 - ixx * 7.0 / 6)))));
    result += (1 + 1 / (2 * x) + ixx * tail) / x;
    return sign * result;
}

/* erfinv: Giles' single-precision approximation ("Approximating the erfinv function",
 * 2010), then Newton steps on erf (|y| <= 1/2) or on log erfc, whose 1 - |y| is exact
 * near the ends, to double precision. */
PG_HD double pg_erfinv(double y)
{
    if (y != y || y < -1 || y > 1)
        return NAN;
    if (y == 1 || y == -1)
        return y * INFINITY;
    double w = -log((1 - y) * (1 + y)), p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double x = p * y, a = fabs(y);
    if (a <= 0.5) {
        for (int i = 0; i < 2; i++)
            x -= (erf(x) - y) / (PG_2_SQRTPI * exp(-x * x));
        return x;
    }
    /* near the ends: Newton on log erfc(|x|) = log(1 - |y|), nearly linear out there */
    double ax = fabs(x), target = log(1 - a);
    for (int i = 0; i < 4; i++) {
        double e = erfc(ax);
        ax += (log(e) - target) * e / (PG_2_SQRTPI * exp(-ax * ax));
    }
    x = copysign(ax, y);
    return x;
}

/* The modified Bessel functions of the first kind I0 and I1 and their exponentially
 * scaled forms exp(-|x|) I(x). |x| <= 30: the power series sum (x/2)^(2k+nu) /
 * (k! (k+nu)!), all terms positive; beyond: the asymptotic expansion
 * e^x / sqrt(2 pi x) sum_k (-1)^k prod_j (4 nu^2 - (2j-1)^2) / (k! (8x)^k). */
PG_HD double pg_bessel_i_scaled(int nu, double x, int scaled)
{
    double ax = fabs(x), r;
    if (ax != ax)
        return x;
    if (ax <= 30) {
        double q = 0.25 * ax * ax, term = nu ? 0.5 * ax : 1, sum = term;
        for (int k = 1; k < 200 && term > 1e-17 * sum; k++) {
            term *= q / ((double)k * (k + nu));
            sum += term;
        }
        r = scaled ? sum * exp(-ax) : sum;
    } else {
        double mu = 4.0 * nu * nu, term = 1, sum = 1;
        for (int k = 1; k <= 25; k++) {
            double t = 2 * k - 1;
            term *= -(mu - t * t) / (k * 8 * ax);
            sum += term;
        }
        double lead = 1 / sqrt(2 * PG_PI * ax);
        r = scaled ? lead * sum : exp(ax - 0.5 * log(2 * PG_PI * ax)) * sum;
    }
    return nu && x < 0 ? -r : r; /* I1 is odd, I0 even */
}

PG_HD double pg_i0(double x) { return pg_bessel_i_scaled(0, x, 0); }
PG_HD double pg_i1(double x) { return pg_bessel_i_scaled(1, x, 0); }

/* The Hurwitz zeta function zeta(s, q) = sum_k (k + q)^-s (s > 1), by Euler-Maclaurin
 * summation: at least nine terms (and up to q + k > 9) directly, then the integral
 * and the Bernoulli corrections B_2j / (2j)! s (s+1) ... (s+2j-2) (q+N)^(1-s-2j).
 * polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x). inf at s = 1 and at q = 0, -1, ...;
 * NaN for s < 1, and for q < 0 with s not an integer (PyTorch's, after Cephes). */
PG_HD double pg_zeta(double s, double q)
{
    /* (2j)! / B_2j, j = 1..12 */
    const double fb[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
                           -1892437580.3183791637, 74724249600.0, -2950130727918.1640625,
                           116467828143500.67188, -4597978722407473.0, 181521054019435456.0,
                           -7166165256175667200.0};
    if (s != s || q != q)
        return s + q;
    if (s == 1)
        return INFINITY;
    if (s < 1)
        return NAN;
    if (q <= 0) {
        if (q == floor(q))
            return INFINITY;
        if (s != floor(s))
            return NAN;
    }
    double sum = pow(q, -s), a = q, b = 0;
    for (int i = 0; i < 9 || a <= 9; i++) {
        a += 1;
        b = pow(a, -s);
        sum += b;
        if (fabs(b / sum) < 1e-17)
            return sum;
    }
    double w = a, fac = 1, k = 0;
    sum += b * w / (s - 1) - 0.5 * b;
    for (int j = 0; j < 12; j++) {
        fac *= s + k;
        b /= w;
        double t = fac * b / fb[j];
        sum += t;
        if (fabs(t / sum) < 1e-17)
            break;
        k += 1;
        fac *= s + k;
        b /= w;
        k += 1;
    }
    return sum;
}

#endif
