/* NBODY6++GPU's irregular-force library timed as NBODY6++ calls it, against whichever
 * library it is linked with (upstream's irr.avx.o, or libnbody_irr_nbody6pp.a and
 * libnbody_c.a): a Plummer sphere of N stars in random index order, every star set at
 * its own block time, lists of its neighbours within a radius that holds about NB of
 * them at its density (at most 600, as NBODY6++'s LMAX), then blocks of NI random stars
 * at later times (set again after each block, as corrected). The first block's forces
 * are checked against a double loop in long double of the same rules.
 *   irr_bench N NB NI BLOCKS   prints one line: interactions/s, us per call, errors */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void irr_simd_open_(int *nmax, int *lmax, int *rank);
void irr_simd_close_(int *rank);
void irr_simd_set_jp_(int *addr, double pos[3], double vel[3], double acc2[3], double jrk6[3], double *mass,
                      double *time);
void irr_simd_set_list_(int *addr, int *nblist);
void irr_simd_firr_vec_(double *ti, int *ni, int addr[], double acc[][3], double jrk[][3], int nnbid[]);

#define LMAX 601
typedef struct {
    double x[3], v[3], f[3], fdot[3], m, t;
} Star;

static unsigned long long rng = 88172645463325252ULL;
static double uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (rng >> 11) * (1.0 / 9007199254740992.0);
}
static double gauss(void) { return sqrt(-2.0 * log(uniform() + 1e-300)) * cos(2.0 * M_PI * uniform()); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void predict(const Star *s, double t, double x[3], double v[3]) {
    double dt = t - s->t;
    for (int k = 0; k < 3; ++k) {
        x[k] = s->x[k] + dt * (s->v[k] + dt * (s->f[k] + dt * s->fdot[k]));
        v[k] = s->v[k] + 2 * dt * (s->f[k] + 1.5 * dt * s->fdot[k]);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s N NB NI BLOCKS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), nb = atoi(argv[2]), ni = atoi(argv[3]), blocks = atoi(argv[4]);
    Star *s = calloc(n, sizeof(Star));
    for (int i = 0; i < n; ++i) {
        double r = 1.0 / sqrt(pow(uniform() * 0.999 + 1e-3, -2.0 / 3.0) - 1.0), d[3], norm = 0;
        for (int k = 0; k < 3; ++k) d[k] = gauss(), norm += d[k] * d[k];
        for (int k = 0; k < 3; ++k) {
            s[i].x[k] = r * d[k] / sqrt(norm);
            s[i].v[k] = 0.4 * gauss();
            s[i].f[k] = 0.5 * gauss();
            s[i].fdot[k] = 2.0 * gauss();
        }
        s[i].m = 1.0 / n;
        s[i].t = (rand() % 16) / 256.0;
    }
    /* Lists: a grid of cells of side c; radius from the Plummer density, at most 4 c. */
    const double c = 0.08, box = 4.0;
    int side = (int)(2 * box / c), cells = side * side * side;
    int *head = malloc(cells * sizeof(int)), *next = malloc(n * sizeof(int));
    for (int k = 0; k < cells; ++k) head[k] = -1;
    int *cell_of = malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) {
        int q[3], inside = 1;
        for (int k = 0; k < 3; ++k) {
            q[k] = (int)floor((s[i].x[k] + box) / c);
            inside &= q[k] >= 0 && q[k] < side;
        }
        cell_of[i] = inside ? (q[0] * side + q[1]) * side + q[2] : -1;
        if (inside) next[i] = head[cell_of[i]], head[cell_of[i]] = i;
    }
    int *lists = malloc((size_t)n * (LMAX + 8) * sizeof(int));
    long long listed = 0;
    for (int i = 0; i < n; ++i) {
        int *l = lists + (size_t)i * (LMAX + 8);
        l[0] = 0;
        if (cell_of[i] < 0) continue;
        double r2c = s[i].x[0] * s[i].x[0] + s[i].x[1] * s[i].x[1] + s[i].x[2] * s[i].x[2];
        double density = 3.0 * n / (4 * M_PI) * pow(1 + r2c, -2.5);
        double h = fmin(cbrt(3.0 * nb / (4 * M_PI * density)), 4 * c);
        int reach = (int)ceil(h / c), q0 = cell_of[i] / (side * side), q1 = cell_of[i] / side % side,
            q2 = cell_of[i] % side;
        for (int a = q0 - reach; a <= q0 + reach; ++a)
            for (int b = q1 - reach; b <= q1 + reach; ++b)
                for (int e = q2 - reach; e <= q2 + reach; ++e) {
                    if (a < 0 || b < 0 || e < 0 || a >= side || b >= side || e >= side) continue;
                    for (int j = head[(a * side + b) * side + e]; j >= 0; j = next[j]) {
                        double d2 = 0;
                        for (int k = 0; k < 3; ++k) d2 += (s[j].x[k] - s[i].x[k]) * (s[j].x[k] - s[i].x[k]);
                        if (j != i && d2 < h * h && l[0] < LMAX - 1) l[++l[0]] = j + 1;
                    }
                }
        listed += l[0];
    }
    int nmax = n, lmax = LMAX, rank = 0;
    irr_simd_open_(&nmax, &lmax, &rank);
    for (int i = 0; i < n; ++i) {
        int a = i + 1;
        irr_simd_set_jp_(&a, s[i].x, s[i].v, s[i].f, s[i].fdot, &s[i].m, &s[i].t);
        irr_simd_set_list_(&a, lists + (size_t)i * (LMAX + 8));
    }
    int *addr = malloc(ni * sizeof(int)), *nn = malloc(ni * sizeof(int));
    double(*acc)[3] = malloc(ni * sizeof *acc), (*jrk)[3] = malloc(ni * sizeof *jrk);
    double seconds = 0, worst_a = 0, worst_j = 0;
    long long inter = 0;
    int nn_differ = 0;
    for (int blk = 0; blk < blocks; ++blk) {
        double ti = 1.0 / 16 + blk / 4096.0;
        for (int k = 0; k < ni; ++k) addr[k] = 1 + (int)(uniform() * n);
        double t0 = now();
        irr_simd_firr_vec_(&ti, &ni, addr, acc, jrk, nn);
        seconds += now() - t0;
        for (int k = 0; k < ni; ++k) inter += lists[(size_t)(addr[k] - 1) * (LMAX + 8)];
        if (blk == 0) {
            for (int k = 0; k < ni; ++k) {
                int i = addr[k] - 1, *l = lists + (size_t)i * (LMAX + 8), near = 0;
                double xi[3], vi[3], best = INFINITY;
                long double a[3] = {0}, j3[3] = {0};
                predict(&s[i], ti, xi, vi);
                for (int q = 1; q <= l[0]; ++q) {
                    double xj[3], vj[3], dx[3], dv[3];
                    predict(&s[l[q] - 1], ti, xj, vj);
                    for (int c3 = 0; c3 < 3; ++c3) dx[c3] = xj[c3] - xi[c3], dv[c3] = vj[c3] - vi[c3];
                    long double r2 = (long double)dx[0] * dx[0] + (long double)dx[1] * dx[1] + (long double)dx[2] * dx[2];
                    long double rv = (long double)dx[0] * dv[0] + (long double)dx[1] * dv[1] + (long double)dx[2] * dv[2];
                    long double w = s[l[q] - 1].m / (r2 * sqrtl(r2));
                    for (int c3 = 0; c3 < 3; ++c3) a[c3] += w * dx[c3], j3[c3] += w * (dv[c3] - 3 * rv / r2 * dx[c3]);
                    if (r2 < best) best = r2, near = l[q];
                }
                long double an = 0, ad = 0, jn = 0, jd = 0;
                for (int c3 = 0; c3 < 3; ++c3) {
                    an += a[c3] * a[c3], ad += (acc[k][c3] - a[c3]) * (acc[k][c3] - a[c3]);
                    jn += j3[c3] * j3[c3], jd += (jrk[k][c3] - j3[c3]) * (jrk[k][c3] - j3[c3]);
                }
                if (an > 0) worst_a = fmax(worst_a, sqrtl(ad / an));
                if (jn > 0) worst_j = fmax(worst_j, sqrtl(jd / jn));
                nn_differ += l[0] > 0 && nn[k] != near;
            }
        }
        for (int k = 0; k < ni; ++k) { /* corrected at ti */
            int i = addr[k] - 1;
            double x[3], v[3];
            predict(&s[i], ti, x, v);
            memcpy(s[i].x, x, sizeof x), memcpy(s[i].v, v, sizeof v), s[i].t = ti;
            irr_simd_set_jp_(&addr[k], s[i].x, s[i].v, s[i].f, s[i].fdot, &s[i].m, &s[i].t);
        }
    }
    irr_simd_close_(&rank);
    printf("N %d <NB> %.1f NI %d blocks %d: %.4f s, %.3e interactions/s, %.1f us/call; first block: max |da|/|a| "
           "%.2e, |dj|/|j| %.2e, nearest differs %d of %d\n",
           n, (double)listed / n, ni, blocks, seconds, inter / seconds, 1e6 * seconds / blocks, worst_a, worst_j,
           nn_differ, ni);
    return 0;
}
