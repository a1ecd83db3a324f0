/* AMUSE's NBODY6++ calls, through its Fortran names (libnbody_gpunb_amuse.a over
 * libnbody_c), against this program's own double loop of upstream's rules: one send,
 * blocks of i-particles with their h2 and regular steps, lists read from list[i*lmax].
 * Prints "lists N/N" and "worst R"; with the argument "bad", ends with a call of too
 * many i-particles, which must stop the program with status 70. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gpunb_open_(int *nbmax, int *irank);
void gpunb_close_(void);
void gpunb_send_(int *nj, double mj[], double xj[][3], double vj[][3]);
void gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                 double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list);
void gpupot_(int *irank, int *istart, int *ni, int *n, double m[], double x[][3], double pot[]);

enum { N = 700, LMAX = 64, BLOCK = 256 };

static double rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (*s >> 8) / 16777216.0;
}

int main(int argc, char **argv) {
    static double m[N], x[N][3], v[N][3], h2[N], dtr[N], acc[N][3], jrk[N][3], pot[N], gp[N];
    static int list[N * LMAX];
    unsigned s = 7;
    for (int j = 0; j < N; ++j) {
        m[j] = (0.5 + rnd(&s)) / N;
        for (int k = 0; k < 3; ++k) {
            x[j][k] = 2 * rnd(&s) - 1;
            v[j][k] = 0.5 * (rnd(&s) - 0.5);
        }
        h2[j] = 0.03 + 0.02 * rnd(&s);
        dtr[j] = 1.0 / 64;
    }
    int nbmax = N, rank = 0, n = N, lmax = LMAX, nnbmax = LMAX - 4;
    gpunb_open_(&nbmax, &rank);
    gpunb_send_(&n, m, x, v);
    for (int from = 0; from < N; from += BLOCK) {
        int ni = N - from < BLOCK ? N - from : BLOCK;
        gpunb_regf_(&ni, h2 + from, dtr + from, x + from, v + from, acc + from, jrk + from, pot + from, &lmax,
                    &nnbmax, list + from * LMAX);
    }
    int good = 0;
    double worst = 0;
    for (int i = 0; i < N; ++i) {
        double a[3] = {0}, jk[3] = {0}, p = 0, scale = 0;
        int found[N], nf = 0;
        for (int j = 0; j < N; ++j) {
            double dx[3], dv[3], q[3];
            for (int k = 0; k < 3; ++k) {
                dx[k] = x[j][k] - x[i][k];
                dv[k] = v[j][k] - v[i][k];
                q[k] = dx[k] + dtr[i] * dv[k];
            }
            double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            double r2p = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
            double r = sqrt(r2), mr3 = r2 > 0 ? m[j] / (r2 * r) : 0;
            scale += mr3 * r;
            if ((r2 < r2p ? r2 : r2p) < h2[i]) {
                found[nf++] = j;
                continue;
            }
            double rv = 3 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) / r2;
            for (int k = 0; k < 3; ++k) {
                a[k] += mr3 * dx[k];
                jk[k] += mr3 * (dv[k] - rv * dx[k]);
            }
            p += m[j] / r;
        }
        const int *l = list + i * LMAX;
        int same = nf > nnbmax ? l[0] == -nf : l[0] == nf && memcmp(l + 1, found, nf * sizeof(int)) == 0;
        good += same;
        double e = fabs(p - pot[i]);
        for (int k = 0; k < 3; ++k) e = fmax(e, fmax(fabs(a[k] - acc[i][k]), 0.0));
        worst = fmax(worst, e / scale);
    }
    int one = 1;
    gpupot_(&rank, &one, &n, &n, m, x, gp);
    double worst_pot = 0;
    for (int i = 0; i < N; ++i) {
        double p = 0;
        for (int j = 0; j < N; ++j) {
            double r2 = 0;
            for (int k = 0; k < 3; ++k) r2 += (x[j][k] - x[i][k]) * (x[j][k] - x[i][k]);
            if (r2 > 0) p += m[j] / sqrt(r2);
        }
        worst_pot = fmax(worst_pot, fabs(p - gp[i]) / p);
    }
    printf("lists %d/%d\nworst %.3e\npotential %.3e\n", good, N, worst, worst_pot);
    if (argc > 1 && strcmp(argv[1], "bad") == 0) {
        int ni = 1025;
        fflush(stdout);
        gpunb_regf_(&ni, h2, dtr, x, v, acc, jrk, pot, &lmax, &nnbmax, list);
        printf("not stopped\n");
    }
    gpunb_close_();
    return 0;
}
