/* A small tree code in C that uses the library as its leaf kernel: the particles are
 * sorted into the cells of a uniform K x K x K grid (a one-level tree); each cell's
 * targets feel the particles of its 27 neighbouring cells directly and every other
 * cell through its monopole (a pseudo-particle at the cell's centre of mass). The
 * whole force evaluation is one batched call: one pair per cell, its sources a list of
 * spans over [sorted particles | monopoles]. Checked against direct summation.
 * Build: cc tree.c $(pkg-config --cflags --libs nbody) -o tree */
#include <math.h>
#include <nbody.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 8
#define CELLS (K * K * K)

static unsigned long long state = 777;

static double uniform(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(state >> 11) + 0.5) / 9007199254740992.0;
}

static int cell_of(const double *x, double lo, double width) {
  int c[3];
  for (int k = 0; k < 3; k++) {
    int v = (int)((x[k] - lo) / width * K);
    c[k] = v < 0 ? 0 : v >= K ? K - 1 : v;
  }
  return (c[0] * K + c[1]) * K + c[2];
}

int main(void) {
  const size_t n = 20000;
  const double eps = 0.01;
  /* A clumpy system in the unit cube: three Gaussian blobs. */
  double *raw = malloc(n * 4 * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    double centre = 0.2 + 0.3 * (double)(i % 3);
    for (int k = 0; k < 3; k++) {
      double g = sqrt(-2.0 * log(uniform())) * cos(2.0 * M_PI * uniform());
      double x = centre + 0.08 * g;
      raw[4 * i + k] = x < 0 ? 0 : x > 1 ? 1 : x;
    }
    raw[4 * i + 3] = 1.0 / (double)n;
  }
  /* Sort by cell (counting sort): each cell's particles become one span. */
  int *cell = malloc(n * sizeof(int));
  size_t start[CELLS + 1] = {0}, fill[CELLS];
  for (size_t i = 0; i < n; i++) cell[i] = cell_of(&raw[4 * i], 0.0, 1.0), start[cell[i] + 1]++;
  for (int c = 0; c < CELLS; c++) start[c + 1] += start[c];
  memcpy(fill, start, sizeof(fill));
  size_t total = n + CELLS; /* particles, then one monopole per cell */
  double *all = aligned_alloc(32, total * 4 * sizeof(double));
  for (size_t i = 0; i < n; i++) memcpy(&all[4 * fill[cell[i]]++], &raw[4 * i], 4 * sizeof(double));
  for (int c = 0; c < CELLS; c++) {
    double m = 0, x[3] = {0, 0, 0};
    for (size_t j = start[c]; j < start[c + 1]; j++) {
      m += all[4 * j + 3];
      for (int k = 0; k < 3; k++) x[k] += all[4 * j + 3] * all[4 * j + k];
    }
    double *mono = &all[4 * (n + c)];
    for (int k = 0; k < 3; k++) mono[k] = m > 0 ? x[k] / m : 0.0;
    mono[3] = m;
  }
  /* The interaction list: per non-empty cell, neighbour cells' spans, then far
   * monopoles (consecutive far cells merge into one span of monopoles). */
  NbodyPair *pairs = malloc(CELLS * sizeof(NbodyPair));
  NbodySpan *spans = malloc((size_t)CELLS * CELLS * sizeof(NbodySpan));
  size_t n_pairs = 0, n_spans = 0;
  for (int c = 0; c < CELLS; c++) {
    if (start[c] == start[c + 1]) continue;
    int ci = c / (K * K), cj = (c / K) % K, ck = c % K;
    size_t first = n_spans;
    for (int d = 0; d < CELLS; d++) {
      int di = d / (K * K), dj = (d / K) % K, dk = d % K;
      int near = abs(di - ci) <= 1 && abs(dj - cj) <= 1 && abs(dk - ck) <= 1;
      if (near) {
        if (start[d] < start[d + 1]) spans[n_spans++] = (NbodySpan){(uint32_t)start[d], (uint32_t)start[d + 1]};
      } else if (n_spans > first && spans[n_spans - 1].end == (uint32_t)(n + d) && spans[n_spans - 1].start >= n) {
        spans[n_spans - 1].end++;
      } else {
        spans[n_spans++] = (NbodySpan){(uint32_t)(n + d), (uint32_t)(n + d + 1)};
      }
    }
    pairs[n_pairs++] = (NbodyPair){{(uint32_t)start[c], (uint32_t)start[c + 1]}, {(uint32_t)first, (uint32_t)n_spans}};
  }
  NbodyExecutor *cpu = NULL;
  if (nbody_open("cpu", &cpu) != NBODY_STATUS_OK) return printf("%s\n", nbody_last_error()), 1;
  NbodyParams prm = {1.0, eps, 1, NBODY_OVERLAP_DISJOINT, 0, 0, 0, NBODY_SOFTENING_PLUMMER};
  double *tree = aligned_alloc(32, total * 4 * sizeof(double));
  memset(tree, 0, total * 4 * sizeof(double));
  /* One call per force evaluation. */
  if (nbody_batch_f64(cpu, all, total, pairs, n_pairs, spans, n_spans, &prm, tree) != NBODY_STATUS_OK)
    return printf("batched call: %s\n", nbody_last_error()), 1;
  double *direct = aligned_alloc(32, n * 4 * sizeof(double));
  memset(direct, 0, n * 4 * sizeof(double));
  prm.overlap = NBODY_OVERLAP_IDENTICAL;
  if (nbody_accelerations_f64(cpu, all, n, all, n, &prm, direct, n) != NBODY_STATUS_OK)
    return printf("direct call: %s\n", nbody_last_error()), 1;
  double *err = malloc(n * sizeof(double)), worst = 0;
  for (size_t i = 0; i < n; i++) {
    double num = 0, den = 0;
    for (int k = 0; k < 3; k++) {
      num += (tree[4 * i + k] - direct[4 * i + k]) * (tree[4 * i + k] - direct[4 * i + k]);
      den += direct[4 * i + k] * direct[4 * i + k];
    }
    err[i] = sqrt(num / den);
    if (err[i] > worst) worst = err[i];
  }
  /* The median by selection (n is small: sort). */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && err[j - 1] > err[j]; j--) {
      double t = err[j];
      err[j] = err[j - 1], err[j - 1] = t;
    }
  size_t inter = 0;
  for (size_t p = 0; p < n_pairs; p++) {
    size_t src = 0;
    for (uint32_t s = pairs[p].sources.start; s < pairs[p].sources.end; s++) src += spans[s].end - spans[s].start;
    inter += (pairs[p].targets.end - pairs[p].targets.start) * src;
  }
  printf("tree: %zu pairs, %zu spans, %zu interactions (direct: %zu); relative force error median %.2e, max %.2e\n",
         n_pairs, n_spans, inter, n * n, err[n / 2], worst);
  int ok = err[n / 2] < 1e-2 && inter < n * n / 2;
  nbody_executor_free(cpu);
  free(raw), free(cell), free(all), free(pairs), free(spans), free(tree), free(direct), free(err);
  printf("%s\n", ok ? "passed" : "FAILED");
  return !ok;
}
