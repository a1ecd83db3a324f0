/* Forces on a Plummer sphere through the C ABI, checked against a plain double loop;
 * then every kind of bad call, each an error code with a message, never a crash.
 * Build: cc plummer.c $(pkg-config --cflags --libs nbody) -o plummer */
#include <math.h>
#include <nbody.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long state = 12345;

static double uniform(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(state >> 11) + 0.5) / 9007199254740992.0;
}

/* Aarseth, Henon and Wielen (1974): radius from the cumulative mass, isotropic. */
static void plummer(double *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double r = 1.0 / sqrt(pow(0.999 * uniform(), -2.0 / 3.0) - 1.0);
    double z = 2.0 * uniform() - 1.0, phi = 2.0 * M_PI * uniform();
    double s = sqrt(1.0 - z * z);
    p[4 * i] = r * s * cos(phi);
    p[4 * i + 1] = r * s * sin(phi);
    p[4 * i + 2] = r * z;
    p[4 * i + 3] = 1.0 / (double)n;
  }
}

static int failures = 0;

static void expect(NbodyStatus got, NbodyStatus want, const char *needle, const char *what) {
  const char *msg = nbody_last_error();
  if (got != want || (needle && !strstr(msg, needle))) {
    printf("FAIL %s: status %d (want %d), message \"%s\"\n", what, (int)got, (int)want, msg);
    failures++;
  } else {
    printf("ok   %s: %s\n", what, want == NBODY_STATUS_OK ? "" : msg);
  }
}

int main(void) {
  const size_t n = 2048;
  const double eps = 1.0 / 64.0;
  /* The library's records are used in place: 32-byte aligned for double. */
  double *p = aligned_alloc(32, n * 4 * sizeof(double));
  double *out = aligned_alloc(32, n * 4 * sizeof(double));
  plummer(p, n);
  memset(out, 0, n * 4 * sizeof(double));

  /* Any backend string of the registry: "cpu" takes every core, "cpu:2" two threads. */
  NbodyExecutor *cpu = NULL;
  expect(nbody_open("cpu", &cpu), NBODY_STATUS_OK, NULL, "nbody_open cpu");
  NbodyParams prm = {1.0, eps, 1, NBODY_OVERLAP_IDENTICAL, 0, 0, 0, NBODY_SOFTENING_PLUMMER};
  expect(nbody_accelerations_f64(cpu, p, n, p, n, &prm, out, n), NBODY_STATUS_OK, NULL, "accelerations, double");

  /* The same sum by hand. */
  double worst = 0.0, worst_phi = 0.0;
  for (size_t i = 0; i < n; i++) {
    double a[3] = {0, 0, 0}, phi = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double d[3] = {p[4 * j] - p[4 * i], p[4 * j + 1] - p[4 * i + 1], p[4 * j + 2] - p[4 * i + 2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps * eps;
      double inv = 1.0 / sqrt(r2), m = p[4 * j + 3];
      for (int k = 0; k < 3; k++) a[k] += m * d[k] * inv * inv * inv;
      phi -= m * inv;
    }
    double num = 0, den = 0;
    for (int k = 0; k < 3; k++) {
      num += (out[4 * i + k] - a[k]) * (out[4 * i + k] - a[k]);
      den += a[k] * a[k];
    }
    if (sqrt(num / den) > worst) worst = sqrt(num / den);
    if (fabs(out[4 * i + 3] - phi) / fabs(phi) > worst_phi) worst_phi = fabs(out[4 * i + 3] - phi) / fabs(phi);
  }
  printf("double: max relative error, acceleration %.3e, potential %.3e\n", worst, worst_phi);
  if (worst > 1e-12 || worst_phi > 1e-12) failures++;

  /* Single precision: 16-byte records. */
  float *q = aligned_alloc(16, n * 4 * sizeof(float)), *qo = aligned_alloc(16, n * 4 * sizeof(float));
  for (size_t i = 0; i < 4 * n; i++) q[i] = (float)p[i], qo[i] = 0.0f;
  expect(nbody_accelerations_f32(cpu, q, n, q, n, &prm, qo, n), NBODY_STATUS_OK, NULL, "accelerations, float");
  double worst32 = 0;
  for (size_t i = 0; i < n; i++) {
    double num = 0, den = 0;
    for (int k = 0; k < 3; k++) {
      num += (qo[4 * i + k] - out[4 * i + k]) * (qo[4 * i + k] - out[4 * i + k]);
      den += out[4 * i + k] * out[4 * i + k];
    }
    if (sqrt(num / den) > worst32) worst32 = sqrt(num / den);
  }
  printf("float: max relative acceleration error %.3e\n", worst32);
  if (worst32 > 1e-4) failures++; /* positions rounded to float, sums in float */

  /* Bad calls: each a status and a message naming what was wrong. */
  expect(nbody_accelerations_f64(cpu, NULL, n, p, n, &prm, out, n), NBODY_STATUS_NULL_POINTER, "targets", "null targets");
  expect(nbody_accelerations_f64(NULL, p, n, p, n, &prm, out, n), NBODY_STATUS_NULL_POINTER, "executor", "null executor");
  expect(nbody_accelerations_f64(cpu, p, n, p, n, NULL, out, n), NBODY_STATUS_NULL_POINTER, "params", "null params");
  expect(nbody_accelerations_f64(cpu, p + 1, n - 1, p, n, &prm, out, n - 1), NBODY_STATUS_MISALIGNED, "32 bytes",
         "misaligned targets");
  expect(nbody_accelerations_f64(cpu, p, n, p, n, &prm, out, n - 1), NBODY_STATUS_LENGTH, "output", "short output");
  NbodyParams bad = prm;
  bad.overlap = 7;
  expect(nbody_accelerations_f64(cpu, p, n, p, n, &bad, out, n), NBODY_STATUS_BAD_PARAMETER, "overlap", "overlap 7");
  bad = prm;
  bad.eps = -1.0;
  expect(nbody_accelerations_f64(cpu, p, n, p, n, &bad, out, n), NBODY_STATUS_BAD_PARAMETER, "eps", "negative eps");
  double keep = p[4 * 5 + 1];
  p[4 * 5 + 1] = NAN;
  expect(nbody_accelerations_f64(cpu, p, n, p, n, &prm, out, n), NBODY_STATUS_BAD_INPUT, "targets[5]", "NaN at 5");
  p[4 * 5 + 1] = keep;
  NbodyExecutor *mixed = NULL;
  expect(nbody_mixed_new(1, &mixed), NBODY_STATUS_OK, NULL, "nbody_mixed_new");
  expect(nbody_accelerations_f32(mixed, q, n, q, n, &prm, qo, n), NBODY_STATUS_UNSUPPORTED, "f64", "float on mixed");
  NbodyExecutor *refused = NULL;
  expect(nbody_open("gpu", &refused), NBODY_STATUS_BAD_PARAMETER, "unknown family", "an unknown backend");
  expect(nbody_open("cpu:100000", &refused), NBODY_STATUS_BAD_PARAMETER, "at most", "more threads than cores");
  NbodyExecutor *gpu = NULL;
  NbodyStatus g = nbody_cuda_new(0, &gpu);
  if (g == NBODY_STATUS_OK) {
    /* On a GPU: the same forces, double and float, against the CPU's. */
    double *go = aligned_alloc(32, n * 4 * sizeof(double));
    memset(go, 0, n * 4 * sizeof(double));
    expect(nbody_accelerations_f64(gpu, p, n, p, n, &prm, go, n), NBODY_STATUS_OK, NULL, "cuda, double");
    for (size_t i = 0; i < 4 * n; i++) qo[i] = 0.0f;
    expect(nbody_accelerations_f32(gpu, q, n, q, n, &prm, qo, n), NBODY_STATUS_OK, NULL, "cuda, float");
    double w64 = 0, w32 = 0;
    for (size_t i = 0; i < n; i++) {
      double num = 0, num32 = 0, den = 0;
      for (int k = 0; k < 3; k++) {
        num += (go[4 * i + k] - out[4 * i + k]) * (go[4 * i + k] - out[4 * i + k]);
        num32 += (qo[4 * i + k] - out[4 * i + k]) * (qo[4 * i + k] - out[4 * i + k]);
        den += out[4 * i + k] * out[4 * i + k];
      }
      if (sqrt(num / den) > w64) w64 = sqrt(num / den);
      if (sqrt(num32 / den) > w32) w32 = sqrt(num32 / den);
    }
    printf("cuda: max relative acceleration error against the CPU, double %.3e, float %.3e\n", w64, w32);
    if (w64 > 1e-12 || w32 > 1e-4) failures++;
    free(go);
    nbody_executor_free(gpu);
  } else {
    expect(g, NBODY_STATUS_NO_DEVICE, "", "nbody_cuda_new without a device");
  }
  nbody_executor_free(mixed);
  nbody_executor_free(cpu);
  nbody_executor_free(NULL);
  free(p), free(out), free(q), free(qo);
  printf("%s (library %s)\n", failures ? "FAILED" : "passed", nbody_version());
  return failures != 0;
}
