/* A tree leapfrog driven from C: a Plummer sphere stepped with Barnes-Hut forces
 * (quadrupole cells) by nbody_tree_run_*, its energy checked against direct summation
 * at the start and its drift over the run. On "cuda:0" the whole step stays on the GPU.
 * Usage: tree_run [backend [n [steps]]], default "cpu" 4096 32.
 * Build: cc tree_run.c $(pkg-config --cflags --libs nbody) -o tree_run */
#include <math.h>
#include <nbody.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long seed = 12345;

static double uniform(void) {
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(seed >> 11) + 0.5) / 9007199254740992.0;
}

/* A random direction of length r into v[0..3]. */
static void isotropic(double r, float *v) {
  double z = 2.0 * uniform() - 1.0, phi = 2.0 * M_PI * uniform(), s = sqrt(1.0 - z * z);
  v[0] = (float)(r * s * cos(phi));
  v[1] = (float)(r * s * sin(phi));
  v[2] = (float)(r * z);
}

/* Aarseth, Henon and Wielen (1974), in N-body units (length scale 3 pi / 16). */
static void plummer(size_t n, float *pos, float *vel) {
  const double a = 3.0 * M_PI / 16.0;
  for (size_t i = 0; i < n; i++) {
    double r = 1.0 / sqrt(pow(uniform(), -2.0 / 3.0) - 1.0);
    if (r > 20.0) r = 20.0;
    isotropic(a * r, &pos[4 * i]);
    pos[4 * i + 3] = (float)(1.0 / (double)n);
    double q, g;
    do {
      q = uniform();
      g = 0.1 * uniform();
    } while (g > q * q * pow(1.0 - q * q, 3.5));
    isotropic(q * sqrt(2.0) * pow(1.0 + r * r, -0.25) / sqrt(a), &vel[4 * i]);
    vel[4 * i + 3] = 0.0f;
  }
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The direct-summation potential energy, on the CPU in doubles. */
static double direct_potential(const float *pos, size_t n, double eps) {
  double *p = aligned_alloc(32, n * 4 * sizeof(double)), *out = aligned_alloc(32, n * 4 * sizeof(double));
  for (size_t i = 0; i < 4 * n; i++) p[i] = pos[i], out[i] = 0.0;
  NbodyExecutor *cpu = NULL;
  NbodyParams params = {1.0, eps, 1, NBODY_OVERLAP_IDENTICAL, 0, 0, 0, NBODY_SOFTENING_PLUMMER};
  double w = NAN;
  if (nbody_open("cpu", &cpu) == NBODY_STATUS_OK &&
      nbody_accelerations_f64(cpu, p, n, p, n, &params, out, n) == NBODY_STATUS_OK) {
    w = 0.0;
    for (size_t i = 0; i < n; i++) w += 0.5 * p[4 * i + 3] * out[4 * i + 3];
  }
  nbody_executor_free(cpu);
  free(p);
  free(out);
  return w;
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : "cpu";
  size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  int steps = argc > 3 ? atoi(argv[3]) : 32;
  const double eps = 1.0 / 64.0, dt = 1.0 / 128.0;
  float *pos = aligned_alloc(16, n * 4 * sizeof(float)), *vel = aligned_alloc(16, n * 4 * sizeof(float));
  plummer(n, pos, vel);
  int failures = 0;

  NbodyExecutor *exec = NULL;
  if (nbody_open(backend, &exec) != NBODY_STATUS_OK) {
    printf("cannot open %s: %s\n", backend, nbody_last_error());
    return 1;
  }
  NbodyTree tree = {0.5, 0.0};
  NbodyTreeRun *run = NULL;
  if (nbody_tree_run_new_f32(exec, pos, vel, n, &tree, eps, NBODY_SOFTENING_PLUMMER, dt, &run) != NBODY_STATUS_OK) {
    printf("FAIL: nbody_tree_run_new_f32: %s\n", nbody_last_error());
    return 1;
  }
  /* exec now belongs to the run. */
  printf("%s, %zu particles, %s tree\n", backend, n, nbody_tree_run_on_device(run) ? "device" : "host");

  double k0, w0;
  if (nbody_tree_run_energies(run, &k0, &w0) != NBODY_STATUS_OK) {
    printf("FAIL: energies: %s\n", nbody_last_error());
    return 1;
  }
  double w_direct = direct_potential(pos, n, eps);
  double tree_error = fabs((w0 - w_direct) / w_direct);
  printf("potential energy: tree %.8f, direct %.8f (relative difference %.2e)\n", w0, w_direct, tree_error);
  if (!(tree_error < 1e-3)) printf("FAIL: the tree's potential energy is off\n"), failures++;

  /* One step to warm up (the first force, allocations), then the timed ones. */
  if (nbody_tree_run_evolve(run, dt) != NBODY_STATUS_OK) {
    printf("FAIL: evolve: %s\n", nbody_last_error());
    return 1;
  }
  double start = seconds();
  if (nbody_tree_run_evolve(run, dt * (steps + 1)) != NBODY_STATUS_OK) {
    printf("FAIL: evolve: %s\n", nbody_last_error());
    return 1;
  }
  double elapsed = seconds() - start;
  double t;
  uint64_t taken;
  nbody_tree_run_time(run, &t, &taken);
  printf("%d steps in %.4f s: %.3f ms per step (t = %.4f, %llu steps)\n", steps, elapsed,
         1e3 * elapsed / steps, t, (unsigned long long)taken);
  if (taken != (uint64_t)steps + 1) printf("FAIL: %llu steps taken\n", (unsigned long long)taken), failures++;

  double k1, w1;
  nbody_tree_run_energies(run, &k1, &w1);
  double drift = fabs((k1 + w1 - k0 - w0) / (k0 + w0));
  printf("energy: %.8f -> %.8f (relative drift %.2e)\n", k0 + w0, k1 + w1, drift);
  if (!(drift < 1e-3)) printf("FAIL: energy drift\n"), failures++;

  /* The state comes back; bad calls are errors, never crashes. */
  if (nbody_tree_run_state_f32(run, pos, vel, n) != NBODY_STATUS_OK) printf("FAIL: state\n"), failures++;
  double moved = 0;
  for (size_t i = 0; i < n; i++) moved += fabs(vel[4 * i]);
  if (!(moved > 0 && isfinite(moved))) printf("FAIL: velocities\n"), failures++;
  if (nbody_tree_run_state_f32(run, pos, vel, n - 1) != NBODY_STATUS_LENGTH) printf("FAIL: short state\n"), failures++;
  else printf("a short array: %s\n", nbody_last_error());
  if (nbody_tree_run_state_f64(run, NULL, NULL, n) != NBODY_STATUS_UNSUPPORTED) printf("FAIL: precision\n"), failures++;
  if (nbody_tree_run_evolve(NULL, 1.0) != NBODY_STATUS_NULL_POINTER) printf("FAIL: null run\n"), failures++;
  NbodyTreeRun *bad = NULL;
  NbodyTree no_theta = {-1.0, 0.0};
  NbodyExecutor *other = NULL;
  nbody_open("cpu:1", &other);
  if (nbody_tree_run_new_f32(other, pos, vel, n, &no_theta, eps, 0, dt, &bad) != NBODY_STATUS_BAD_PARAMETER || bad)
    printf("FAIL: a negative theta\n"), failures++;
  else printf("a negative theta: %s\n", nbody_last_error());

  /* A checkpoint: saved, loaded on a fresh executor, both runs stepped on: the same bits. */
  char path[512];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/tree_run_%ld.ckpt", tmp && *tmp ? tmp : "/tmp", (long)clock());
  NbodyExecutor *fresh = NULL;
  NbodyTreeRun *loaded = NULL;
  if (nbody_tree_run_save(run, path) != NBODY_STATUS_OK || nbody_open(backend, &fresh) != NBODY_STATUS_OK ||
      nbody_tree_run_load(fresh, path, &loaded) != NBODY_STATUS_OK) {
    printf("FAIL: checkpoint: %s\n", nbody_last_error());
    failures++;
  } else {
    float *p2 = aligned_alloc(16, n * 4 * sizeof(float)), *v2 = aligned_alloc(16, n * 4 * sizeof(float));
    nbody_tree_run_evolve(run, dt * (steps + 5));
    nbody_tree_run_evolve(loaded, dt * (steps + 5));
    nbody_tree_run_state_f32(run, pos, vel, n);
    nbody_tree_run_state_f32(loaded, p2, v2, n);
    int same = !memcmp(pos, p2, n * 4 * sizeof(float)) && !memcmp(vel, v2, n * 4 * sizeof(float));
    printf("saved, loaded and stepped 4 more: %s\n", same ? "the same bits" : "DIFFERENT");
    if (!same) failures++;
    free(p2);
    free(v2);
  }
  remove(path);
  nbody_tree_run_free(loaded);
  FILE *junk = fopen(path, "wb");
  if (junk) fputs("not a run", junk), fclose(junk);
  NbodyExecutor *third = NULL;
  NbodyTreeRun *none = NULL;
  nbody_open("cpu:1", &third);
  if (nbody_tree_run_load(third, path, &none) != NBODY_STATUS_FILE || none) printf("FAIL: a foreign file\n"), failures++;
  else printf("a foreign file: %s\n", nbody_last_error());
  remove(path);

  nbody_tree_run_free(run);
  free(pos);
  free(vel);
  printf(failures ? "%d checks FAILED\n" : "all checks passed\n", failures);
  return failures ? 1 : 0;
}
