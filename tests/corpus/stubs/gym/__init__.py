"""A stand-in for the `gym` package (not installed here, and the corpus never downloads):
CartPole, written from gym's classic-control cartpole.py (the same physics, bounds, rewards
and time limits), so that the reinforcement-learning programs of the corpus run unchanged.

Both of gym's interfaces, as the programs were written for one or the other:
  gym 0.26 (the default): reset() -> (obs, info); step(a) -> (obs, reward, terminated,
      truncated, info), truncated at the time limit;
  gym 0.21 (CORPUS_GYM_API=0.21 in the program's environment, manifest `env`):
      reset() -> obs; step(a) -> (obs, reward, done, info), done at the time limit too.
Starting states are drawn from a NumPy stream seeded by make() (the same in the pygpu and
the torch run of a program, and in every process of a multiprocessing one).
This is a test fixture of tests/corpus/, not part of pygpu."""
import math
import os

import numpy as np

__version__ = os.environ.get("CORPUS_GYM_API", "0.26")
_OLD_API = __version__ == "0.21"
_made = [0]


class Discrete:
    def __init__(self, n):
        self.n = n
        self.shape = ()


class Box:
    def __init__(self, shape):
        self.shape = shape


class CartPoleEnv:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, max_episode_steps):
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        self.action_space = Discrete(2)
        self.observation_space = Box((4,))
        self.max_episode_steps = max_episode_steps
        self.np_random = np.random.Generator(np.random.PCG64(1000 + _made[0]))
        _made[0] += 1
        self.state, self.steps = None, 0

    @property
    def unwrapped(self):
        return self

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.Generator(np.random.PCG64(seed))
        self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
        self.steps = 0
        obs = np.array(self.state, dtype=np.float32)
        return obs if _OLD_API else (obs, {})

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if int(action) == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot ** 2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.steps += 1
        terminated = bool(x < -self.x_threshold or x > self.x_threshold
                          or theta < -self.theta_threshold_radians
                          or theta > self.theta_threshold_radians)
        truncated = self.max_episode_steps is not None and self.steps >= self.max_episode_steps
        obs = np.array(self.state, dtype=np.float32)
        if _OLD_API:
            return obs, 1.0, terminated or truncated, {}
        return obs, 1.0, terminated, truncated, {}

    def render(self, *args, **kwargs):
        return None

    def close(self):
        pass


_LIMITS = {"CartPole-v0": 200, "CartPole-v1": 500}


def make(name, max_episode_steps=None, **kwargs):
    if name not in _LIMITS:
        raise NotImplementedError(f"the corpus's gym stand-in has no {name!r}: "
                                  f"only {sorted(_LIMITS)}")
    return CartPoleEnv(max_episode_steps or _LIMITS[name])
