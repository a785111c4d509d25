"""Measured rates of the compute model (``robustsafe.experiments.compute``).

Written by ``python benchmarks/compute_rates.py`` from the committed runs' metrics.csv
(benchmarks/results/table1,
benchmarks/results/table1alg,
benchmarks/results/table1da,
benchmarks/results/offpolicy_adv,
benchmarks/results/sac_multiplier/table-150k;
preset fast, 2 cores, the runs on AMD EPYC only) and
benchmarks/results/compute/calibration.json; do not edit.
"""

# "<env>/<run directory name>": microseconds per env step of a whole fast-preset training
# (wall: start-up, checkpoints and updates included) and of its parts, summed over epochs; the
# runs pooled; and their env layout (envs, worker processes). attacked: the share of the runs'
# env steps acted on attacked observations, from each run's config.yaml (random / adv-*:
# robust.attacked_fraction, 1 in runs older than the option, x the epochs after
# robust.schedule_start over the epochs, or x 1 under the constant schedule; other modes 0),
# the runs' shares weighted by their env steps as the per-step rates pool (attacked steps
# summed over steps summed).
FIELDS = ("wall", "env", "attack", "policy", "update", "runs", "num_envs", "workers", "attacked")
MEASURED = {
    "SafetyAntCircle-v0/adv-mc": (2970.46, 1241.28, 1261.65, 19.08, 389.48, 5, 20, 2, 0.4067),
    "SafetyAntCircle-v0/adv-mr": (3344.04, 1249.03, 1624.4, 20.03, 388.86, 5, 20, 2, 0.4067),
    "SafetyAntCircle-v0/random": (1452.1, 1023.34, 23.76, 22.38, 331.47, 5, 20, 2, 0.4067),
    "SafetyAntCircle-v0/sa-mad": (1632.16, 1068.14, 84.43, 28.33, 400.85, 5, 20, 2, 0.0),
    "SafetyAntCircle-v0/sa-mc": (1716.48, 1107.91, 142.56, 28.1, 392.39, 5, 20, 2, 0.0),
    "SafetyAntCircle-v0/sa-mr": (1767.63, 1043.71, 211.28, 28.49, 437.35, 5, 20, 2, 0.0),
    "SafetyAntCircle-v0/vanilla": (1559.59, 1128.15, 0.0, 24.63, 354.16, 5, 20, 2, 0.0),
    "SafetyAntRun-v0/adv-mc": (3370.89, 1027.45, 1831.43, 19.5, 417.09, 3, 20, 2, 0.8),
    "SafetyAntRun-v0/adv-mr": (3914.28, 1008.49, 2232.53, 19.63, 410.03, 3, 20, 2, 0.8),
    "SafetyAntRun-v0/random": (1476.09, 972.13, 20.4, 21.74, 396.45, 5, 20, 2, 0.8),
    "SafetyAntRun-v0/sa-mad": (1786.01, 1052.61, 90.2, 26.65, 548.93, 4, 20, 2, 0.0),
    "SafetyAntRun-v0/sa-mc": (2010.58, 1188.14, 165.0, 26.99, 565.32, 4, 20, 2, 0.0),
    "SafetyAntRun-v0/sa-mr": (2101.71, 1189.82, 234.91, 27.33, 585.2, 4, 20, 2, 0.0),
    "SafetyAntRun-v0/vanilla": (1003.84, 535.93, 0.0, 17.73, 340.81, 1, 20, 2, 0.0),
    "SafetyCarCircle-v0/adv-mc": (1070.41, 628.97, 211.72, 8.34, 199.64, 3, 20, 2, 0.8667),
    "SafetyCarCircle-v0/adv-mr": (1124.27, 621.28, 262.2, 8.01, 210.17, 3, 20, 2, 0.8667),
    "SafetyCarCircle-v0/cvpo-vanilla": (15377.57, 1337.33, 0.0, 43.85, 13933.92, 3, 20, 2, 0.0),
    "SafetyCarCircle-v0/focops-adv-mc": (2802.65, 1254.63, 1043.36, 21.4, 451.39, 3, 20, 2, 0.3333),
    "SafetyCarCircle-v0/focops-adv-mr": (
        2801.39,
        1199.51,
        1132.73,
        19.88,
        419.35,
        3,
        20,
        2,
        0.3333,
    ),
    "SafetyCarCircle-v0/random": (1334.58, 861.87, 15.0, 14.27, 403.39, 3, 20, 2, 0.8667),
    "SafetyCarCircle-v0/sa-mad": (1683.85, 970.79, 95.73, 18.41, 556.63, 3, 20, 2, 0.0),
    "SafetyCarCircle-v0/sa-mc": (1519.4, 878.73, 117.22, 18.56, 468.65, 3, 20, 2, 0.0),
    "SafetyCarCircle-v0/sa-mr": (2186.37, 1174.62, 264.72, 18.56, 678.45, 3, 20, 2, 0.0),
    "SafetyCarCircle-v0/sac-lag-adv-mc": (
        17706.14,
        2301.0,
        4248.68,
        398.1,
        10375.73,
        1,
        2,
        2,
        0.2493,
    ),
    "SafetyCarCircle-v0/sac-lag-adv-mr": (
        19474.76,
        2313.82,
        4560.73,
        396.97,
        11710.83,
        1,
        2,
        2,
        0.2493,
    ),
    "SafetyCarCircle-v0/sac-lag-vanilla": (5066.3, 1193.22, 0.0, 194.33, 3502.76, 3, 2, 2, 0.0),
    "SafetyCarCircle-v0/sac-lag0.0001-vanilla": (
        5486.24,
        1332.65,
        0.0,
        263.78,
        3707.99,
        3,
        2,
        2,
        0.0,
    ),
    "SafetyCarCircle-v0/sac-lag0.01-vanilla": (4858.0, 1177.78, 0.0, 206.61, 3308.6, 3, 2, 2, 0.0),
    "SafetyCarCircle-v0/sac-lag0.1-vanilla": (5021.71, 1266.64, 0.0, 209.58, 3337.42, 3, 2, 2, 0.0),
    "SafetyCarCircle-v0/vanilla": (949.76, 654.16, 0.0, 15.96, 250.57, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/adv-mc": (820.63, 514.46, 180.07, 6.75, 88.57, 3, 20, 2, 0.9),
    "SafetyCarRun-v0/adv-mr": (821.53, 495.46, 207.26, 6.29, 83.0, 3, 20, 2, 0.9),
    "SafetyCarRun-v0/cvpo-adv-mc": (13053.58, 1209.09, 907.39, 46.31, 10811.28, 1, 20, 2, 0.4),
    "SafetyCarRun-v0/cvpo-vanilla": (9202.95, 1363.8, 0.0, 41.08, 7744.01, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/focops-adv-mc": (1907.17, 756.8, 855.26, 11.95, 256.17, 3, 20, 2, 0.8),
    "SafetyCarRun-v0/focops-adv-mr": (1402.36, 550.07, 669.6, 8.49, 147.23, 3, 20, 2, 0.8),
    "SafetyCarRun-v0/focops-vanilla": (1024.26, 718.66, 0.0, 13.73, 265.36, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/random": (640.85, 492.59, 12.53, 10.41, 93.76, 3, 20, 2, 0.9),
    "SafetyCarRun-v0/sa-mad": (612.71, 464.55, 13.0, 13.04, 91.9, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/sa-mc": (647.71, 476.46, 22.16, 13.54, 104.81, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/sa-mr": (649.94, 466.02, 36.45, 10.67, 107.5, 3, 20, 2, 0.0),
    "SafetyCarRun-v0/sac-lag-adv-mc": (15805.86, 2189.61, 5881.81, 371.46, 7092.58, 3, 2, 2, 0.4),
    "SafetyCarRun-v0/sac-lag-adv-mr": (16515.29, 2055.95, 6392.46, 345.05, 7467.65, 3, 2, 2, 0.4),
    "SafetyCarRun-v0/sac-lag-vanilla": (2861.04, 963.38, 0.0, 179.63, 1587.94, 3, 2, 2, 0.0),
    "SafetyCarRun-v0/sac-lag0.0001-vanilla": (3160.12, 1097.75, 0.0, 204.26, 1707.05, 3, 2, 2, 0.0),
    "SafetyCarRun-v0/sac-lag0.01-vanilla": (3111.71, 1085.22, 0.0, 198.06, 1684.22, 3, 2, 2, 0.0),
    "SafetyCarRun-v0/sac-lag0.1-vanilla": (3098.42, 1068.97, 0.0, 189.99, 1704.96, 3, 2, 2, 0.0),
    "SafetyCarRun-v0/vanilla": (625.6, 485.38, 0.0, 13.66, 90.89, 3, 20, 2, 0.0),
    "SafetyDroneCircle-v0/adv-mc": (2024.04, 645.85, 1011.36, 16.68, 317.59, 5, 20, 2, 0.4),
    "SafetyDroneCircle-v0/adv-mr": (2437.59, 646.75, 1288.71, 16.86, 322.81, 5, 20, 2, 0.4),
    "SafetyDroneCircle-v0/random": (787.1, 479.24, 20.01, 19.01, 242.79, 5, 20, 2, 0.4),
    "SafetyDroneCircle-v0/sa-mad": (1324.37, 709.69, 88.64, 24.81, 466.51, 4, 20, 2, 0.0),
    "SafetyDroneCircle-v0/sa-mc": (1494.28, 768.93, 155.24, 24.83, 509.0, 4, 20, 2, 0.0),
    "SafetyDroneCircle-v0/sa-mr": (1335.86, 667.69, 193.22, 23.55, 417.79, 4, 20, 2, 0.0),
    "SafetyDroneCircle-v0/vanilla": (773.97, 477.62, 0.0, 23.53, 247.78, 2, 20, 2, 0.0),
    "SafetyDroneRun-v0/adv-mc": (2452.31, 490.44, 1523.68, 14.6, 379.06, 3, 20, 2, 0.92),
    "SafetyDroneRun-v0/adv-mr": (2542.31, 419.88, 1736.31, 12.58, 333.65, 3, 20, 2, 0.92),
    "SafetyDroneRun-v0/random": (859.72, 411.96, 16.22, 14.82, 372.78, 3, 20, 2, 0.92),
    "SafetyDroneRun-v0/sa-mad": (1275.44, 538.24, 87.89, 19.05, 571.62, 2, 20, 2, 0.0),
    "SafetyDroneRun-v0/sa-mc": (1309.14, 545.86, 143.28, 21.37, 549.27, 2, 20, 2, 0.0),
    "SafetyDroneRun-v0/sa-mr": (1286.25, 491.68, 198.15, 19.41, 528.56, 3, 20, 2, 0.0),
    "SafetyDroneRun-v0/vanilla": (788.56, 390.73, 0.0, 16.96, 332.83, 3, 20, 2, 0.0),
}

# The task the others are scaled from, and each task's seconds per env step of env stepping,
# policy and updates relative to it (fast vanilla trainings, a few epochs each, side by side).
REFERENCE = "SafetyCarCircle-v0"
TRAIN_OVER_REFERENCE = {
    "SafetyCarRun-v0": (0.734, 0.843, 0.477),
    "SafetyCarCircle-v0": (1.0, 1.0, 1.0),
    "SafetyDroneRun-v0": (0.488, 0.968, 1.273),
    "SafetyDroneCircle-v0": (0.644, 1.107, 0.998),
    "SafetyAntRun-v0": (0.756, 0.934, 1.264),
    "SafetyAntCircle-v0": (0.879, 0.932, 1.121),
}

# The reference task's env + policy + update microseconds per env step in those trainings on
# the rates' machine: what robustsafe.experiments.machine_speed compares another machine with.
REFERENCE_TRAIN_US_PER_STEP = 1178.6

# Update seconds per env step under the paper preset over fast's (the reference task, vanilla).
PAPER_UPDATE_FACTOR = 4.395

# An evaluation's seconds per env step (robustsafe evaluate's layout: 10 envs, 2 workers) over
# the fast training's env + policy seconds per step, on the reference task: natural / random,
# and the gradient attackers (MAD, AMAD, MC, MR).
EVAL_CHEAP_FACTOR = 1.125
EVAL_GRADIENT_FACTOR = 2.933
