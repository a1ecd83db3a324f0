/* A collisional code written against GRAPE-6, as NBODY4-6 and phiGRAPE are: fourth-order
 * Hermite with block time steps, the forces, jerks and nearest neighbours from g6calc_*,
 * the j-particles predicted by the board. Reads "n" then n lines "x y z m vx vy vz"
 * from argv[1], integrates to t_end and prints the block-step count and the final
 * positions and velocities; on the way it checks every nearest neighbour and neighbour
 * list against its own double loop over the same predicted positions.
 * Usage: grape6_hermite ICS ETA DT_MAX EPS T_END [bench|bench-nb]   (no checks, for timing:
 * "bench" reads forces only (g6calc_lasthalf), "bench-nb" nearest neighbours and lists too) 
 * Build: cc -std=c11 grape6_hermite.c -I capi/include libnbody_c.a -lm ... */
#include <grape6.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ETA_START 0.01
#define MIN_FRACTION (1.0 / 1099511627776.0)

static double norm(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

static double dt_max;

static double quantize(double dt) {
  double q = dt_max;
  while (q > dt && q > dt_max * MIN_FRACTION) q *= 0.5;
  return q;
}

static int failures = 0;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: %s ICS ETA DT_MAX EPS T_END [bench]\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  int n;
  if (!f || fscanf(f, "%d", &n) != 1 || n < 2) return 2;
  const int check = argc == 6;
  const int neighbours = check || strcmp(argv[6], "bench-nb") == 0;
  double eta = atof(argv[2]), eps = atof(argv[4]), t_end = atof(argv[5]);
  dt_max = atof(argv[3]);
  double(*x)[3] = malloc(sizeof(double[3]) * n), (*v)[3] = malloc(sizeof(double[3]) * n);
  double(*a)[3] = malloc(sizeof(double[3]) * n), (*j)[3] = malloc(sizeof(double[3]) * n);
  double(*xp)[3] = malloc(sizeof(double[3]) * n), (*vp)[3] = malloc(sizeof(double[3]) * n);
  double(*ai)[3] = malloc(sizeof(double[3]) * n), (*ji)[3] = malloc(sizeof(double[3]) * n);
  double *m = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n), *dt = malloc(sizeof(double) * n);
  double *pot = malloc(sizeof(double) * n), *h2 = malloc(sizeof(double) * n);
  int *active = malloc(sizeof(int) * n), *nnb = malloc(sizeof(int) * n), *list = malloc(sizeof(int) * n);
  for (int i = 0; i < n; i++)
    if (fscanf(f, "%lf %lf %lf %lf %lf %lf %lf", &x[i][0], &x[i][1], &x[i][2], &m[i], &v[i][0], &v[i][1], &v[i][2]) != 7)
      return 2;
  fclose(f);
  double eps2 = eps * eps, zero[3] = {0, 0, 0};
  const int id = 0, pipes = g6_npipes();
  if (g6_open(id) != 0) return 1;

  /* The block of active particles `active[0..na]`: predicted positions and velocities
   * in xp/vp (index by particle), forces into ai/ji (by particle). */
  long checked = 0;
  double in_calc = 0.0, in_set = 0.0; /* seconds inside g6calc_* and g6_set_j_particle */
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; i < n; i++) {
    t[i] = 0.0;
    g6_set_j_particle(id, i, i, 0.0, 0.0, m[i], zero, zero, zero, v[i], x[i]);
  }
  int steps = 0;
  double time = 0.0;
  int first = 1;
  while (first || time < t_end) {
    int na = 0;
    double t_next = 0.0;
    if (first) {
      for (int i = 0; i < n; i++) active[na++] = i;
    } else {
      t_next = INFINITY;
      for (int i = 0; i < n; i++) t_next = fmin(t_next, t[i] + dt[i]);
      for (int i = 0; i < n; i++)
        if (t[i] + dt[i] == t_next) active[na++] = i;
    }
    /* The active particles predicted (the board predicts the j-particles itself); every
     * particle when checking, for the double loops. */
    for (int q = 0; q < (check ? n : na); q++) {
      int i = check ? q : active[q];
      double d = t_next - t[i];
      for (int k = 0; k < 3; k++) {
        xp[i][k] = x[i][k] + d * (v[i][k] + d * (0.5 * a[i][k] + d * j[i][k] / 6.0));
        vp[i][k] = v[i][k] + d * (a[i][k] + 0.5 * d * j[i][k]);
      }
      if (first) {
        for (int k = 0; k < 3; k++) xp[i][k] = x[i][k], vp[i][k] = v[i][k];
      }
    }
    g6_set_ti(id, t_next);
    for (int off = 0; off < na; off += pipes) {
      int ni = na - off < pipes ? na - off : pipes;
      int idx[ni];
      double(*bx)[3] = malloc(sizeof(double[3]) * ni), (*bv)[3] = malloc(sizeof(double[3]) * ni);
      double(*ba)[3] = malloc(sizeof(double[3]) * ni), (*bj)[3] = malloc(sizeof(double[3]) * ni);
      double *bh = malloc(sizeof(double) * ni);
      for (int k = 0; k < ni; k++) {
        int i = active[off + k];
        idx[k] = i;
        for (int c = 0; c < 3; c++) bx[k][c] = xp[i][c], bv[k][c] = vp[i][c];
        bh[k] = 0.01 * (1 + i % 4) * pow(256.0 / n, 2.0 / 3.0); /* a few radii, ~N^-1/3 */
      }
      const double t0 = now();
      g6calc_firsthalf(id, n, ni, idx, bx, bv, ba, bj, pot, eps2, bh);
      if (neighbours) {
        if (g6calc_lasthalf2(id, n, ni, idx, bx, bv, eps2, bh, ba, bj, pot + off, nnb + off) != 0) return 1;
        if (g6_read_neighbour_list(id) != 0) failures++;
        for (int k = 0; k < ni && !check; k++) {
          int len = -1;
          if (g6_get_neighbour_list(id, k, n, &len, list) != 0) failures++;
        }
      } else if (g6calc_lasthalf(id, n, ni, idx, bx, bv, eps2, bh, ba, bj, pot + off) != 0) {
        return 1;
      }
      in_calc += now() - t0;
      for (int k = 0; k < ni; k++) {
        int i = idx[k];
        for (int c = 0; c < 3; c++) ai[i][c] = ba[k][c], ji[i][c] = bj[k][c];
        if (!check) continue;
        /* The nearest neighbour and the list against a double loop. */
        double best = INFINITY;
        int count = 0;
        for (int q = 0; q < n; q++) {
          double d2 = 0;
          for (int c = 0; c < 3; c++) d2 += (xp[q][c] - xp[i][c]) * (xp[q][c] - xp[i][c]);
          if (q != i && d2 < best) best = d2;
          if (d2 <= bh[k]) count++;
        }
        double got2 = 0;
        for (int c = 0; c < 3; c++) got2 += (xp[nnb[off + k]][c] - xp[i][c]) * (xp[nnb[off + k]][c] - xp[i][c]);
        int len = -1;
        if (g6_get_neighbour_list(id, k, n, &len, list) != 0) failures++;
        int sorted = 1, self = 0, inside = 1;
        for (int q = 0; q < len; q++) {
          if (q > 0 && list[q] <= list[q - 1]) sorted = 0;
          if (list[q] == i) self = 1;
          double d2 = 0;
          for (int c = 0; c < 3; c++) d2 += (xp[list[q]][c] - xp[i][c]) * (xp[list[q]][c] - xp[i][c]);
          if (d2 > bh[k] * (1 + 1e-12)) inside = 0;
        }
        if (nnb[off + k] == i || got2 > best * (1 + 1e-12) || len != count || !sorted || !self || !inside) {
          if (failures++ < 5)
            printf("FAIL particle %d: nearest %d (r2 %g, best %g), list %d of %d, sorted %d self %d inside %d\n", i,
                   nnb[off + k], got2, best, len, count, sorted, self, inside);
        }
        checked++;
      }
      free(bx), free(bv), free(ba), free(bj), free(bh);
    }
    for (int q = 0; q < na; q++) {
      int i = active[q];
      if (first) {
        for (int c = 0; c < 3; c++) a[i][c] = ai[i][c], j[i][c] = ji[i][c];
        double d = ETA_START * norm(a[i]) / norm(j[i]);
        dt[i] = quantize(isfinite(d) && d > 0 ? d : dt_max);
      } else {
        double h = t_next - t[i], x1[3], v1[3], a2[3], a3[3];
        for (int c = 0; c < 3; c++) {
          v1[c] = v[i][c] + 0.5 * h * (a[i][c] + ai[i][c]) + h * h * (j[i][c] - ji[i][c]) / 12.0;
          x1[c] = x[i][c] + 0.5 * h * (v[i][c] + v1[c]) + h * h * (a[i][c] - ai[i][c]) / 12.0;
          a3[c] = (12.0 * (a[i][c] - ai[i][c]) + 6.0 * h * (j[i][c] + ji[i][c])) / (h * h * h);
          a2[c] = (-6.0 * (a[i][c] - ai[i][c]) - h * (4.0 * j[i][c] + 2.0 * ji[i][c])) / (h * h) + a3[c] * h;
        }
        double na_ = norm(ai[i]), nj = norm(ji[i]), n2 = norm(a2), n3 = norm(a3);
        double want = sqrt(eta * (na_ * n2 + nj * nj) / (nj * n3 + n2 * n2));
        if (!(isfinite(want) && want > 0)) want = 2.0 * h;
        double new_dt = quantize(fmin(want, 2.0 * h));
        double whole;
        if (new_dt > h && modf(t_next / new_dt, &whole) != 0.0) new_dt = h;
        for (int c = 0; c < 3; c++) x[i][c] = x1[c], v[i][c] = v1[c], a[i][c] = ai[i][c], j[i][c] = ji[i][c];
        dt[i] = new_dt;
        t[i] = t_next;
      }
    }
    /* The corrected particles back into the j-memory: timed as one loop (a clock read
       around each call would cost more than the call). */
    const double t1 = now();
    for (int q = 0; q < na; q++) {
      int i = active[q];
      double a2h[3], j6[3];
      for (int c = 0; c < 3; c++) a2h[c] = 0.5 * a[i][c], j6[c] = j[i][c] / 6.0;
      g6_set_j_particle(id, i, i, t[i], dt[i], m[i], zero, j6, a2h, v[i], x[i]);
    }
    in_set += now() - t1;
    if (!first) {
      time = t_next;
      steps++;
    }
    first = 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  g6_close(id);
  printf("steps %d checked %ld failures %d wall_seconds %.6f in_calc %.6f in_set %.6f\n", steps, checked, failures,
         seconds, in_calc, in_set);
  for (int i = 0; i < n; i++)
    printf("%.17g %.17g %.17g %.17g %.17g %.17g\n", x[i][0], x[i][1], x[i][2], v[i][0], v[i][1], v[i][2]);
  return failures != 0;
}
