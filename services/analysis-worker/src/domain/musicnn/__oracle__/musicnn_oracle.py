"""Independent numpy reference of the MusiCNN pipeline, the test oracle of mel.ts and network.ts.

Written from the model README (../shared/models/musicnn/README.md) and librosa's documented formulas, not
from the TypeScript: float64 throughout, STFT with numpy.fft.rfft on np.pad(mode='reflect') frames, Slaney
mel bank built from librosa's mel_frequencies/ramps formula, convolutions as sliding windows + tensordot.

Usage: python3 musicnn_oracle.py <weights-dir from dump-weights.mjs> <pcm.f32 (16 kHz mono float32)>
         <comma-separated patch start frames> <out.json> [uncentred]
Writes {"mel": [[frame][96]] for the requested patches (patch-major), "tags": [[50]], "penultimate": [[200]],
"dense": [[200]]} where "dense" is the 200-d dense layer before its ReLU (musicnn's `model/dense/BiasAdd`, the
reference implementation's stored vector). With `uncentred` the STFT frames are not padded (librosa center=False,
the reference implementation's front end).
"""
import json
import os
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

SR, N_FFT, HOP, N_MELS, FMAX, PATCH = 16000, 512, 256, 96, 8000.0, 187
EPS = 1e-3


def hz_to_mel(f):
    f = np.asanyarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def mel_to_hz(m):
    m = np.asanyarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def mel_bank():
    fftfreqs = np.linspace(0, SR / 2, N_FFT // 2 + 1)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(FMAX), N_MELS + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    w = np.zeros((N_MELS, len(fftfreqs)))
    for i in range(N_MELS):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        w[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:N_MELS + 2] - mel_f[:N_MELS])
    return w * enorm[:, None]


def log_mel(y, centred=True):
    y = y.astype(np.float64)
    if centred:
        y = np.pad(y, N_FFT // 2, mode='reflect')
    n_frames = 1 + (len(y) - N_FFT) // HOP
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    frames = np.stack([y[t * HOP:t * HOP + N_FFT] * win for t in range(n_frames)])
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    return np.log10(10000.0 * (power @ mel_bank().T) + 1.0)


class Weights:
    def __init__(self, d):
        self.d = d
        self.index = json.load(open(os.path.join(d, 'index.json')))

    def __call__(self, layer, role):
        key = f'{layer}.{role}'
        return np.fromfile(os.path.join(self.d, key + '.f32'), dtype='<f4').astype(np.float64).reshape(self.index[key])

    def bn(self, layer, x):
        g, b, m, v = (self(layer, r) for r in ('gamma', 'beta', 'moving_mean', 'moving_variance'))
        return (x - m) / np.sqrt(v + EPS) * g + b


def conv_time_freq(x, k, b):
    """x [T, F] (already padded as needed), k [kh, kw, 1, C] valid -> relu([T', F', C])."""
    kh, kw = k.shape[0], k.shape[1]
    win = sliding_window_view(x, (kh, kw))  # [T', F', kh, kw]
    return np.maximum(np.tensordot(win, k[:, :, 0, :], axes=([2, 3], [0, 1])) + b, 0)


def conv_time(x, k, b):
    """x [T+6, C_in], k [7, C_in, 1, C_out] valid over time -> relu([T, C_out])."""
    win = sliding_window_view(x, 7, axis=0)  # [T, C_in, 7]
    return np.maximum(np.tensordot(win, k[:, :, 0, :], axes=([2, 1], [0, 1])) + b, 0)


def forward(w, patch):
    x = w.bn('batch_normalization', patch)  # [187, 96]
    xp = np.pad(x, ((3, 3), (0, 0)))
    outs = []
    for i, layer in enumerate(['conv2d', 'conv2d_1', 'conv2d_2', 'conv2d_3', 'conv2d_4']):
        k = w(layer, 'kernel')
        if i < 2:
            inp = xp
        else:
            kh = k.shape[0]
            inp = np.pad(x, (((kh - 1) // 2, kh - 1 - (kh - 1) // 2), (0, 0)))
        y = w.bn(f'batch_normalization_{i + 1}', conv_time_freq(inp, k, w(layer, 'bias')))
        outs.append(y.max(axis=1))
    front = np.concatenate(outs, axis=1)  # [187, 561]
    m1 = w.bn('bn_midend_conv1', conv_time(np.pad(front, ((3, 3), (0, 0))), w('midend_conv1', 'kernel'), w('midend_conv1', 'bias')))
    m2 = w.bn('bn_midend_conv2', conv_time(np.pad(m1, ((3, 3), (0, 0))), w('midend_conv2', 'kernel'), w('midend_conv2', 'bias'))) + m1
    m3 = w.bn('bn_midend_conv3', conv_time(np.pad(m2, ((3, 3), (0, 0))), w('midend_conv3', 'kernel'), w('midend_conv3', 'bias'))) + m2
    c = np.concatenate([front, m1, m2, m3], axis=1)  # [187, 753]
    pooled = np.stack([c.max(axis=0), c.mean(axis=0)], axis=1).reshape(-1)  # interleaved max, mean
    h = w.bn('bn_flatpool', pooled)
    dense = h @ w('dense', 'kernel') + w('dense', 'bias')
    pen = w.bn('bn_dense', np.maximum(dense, 0))
    logits = pen @ w('dense_1', 'kernel') + w('dense_1', 'bias')
    return 1 / (1 + np.exp(-logits)), pen, dense


def main():
    wdir, pcm_path, starts, out = sys.argv[1:5]
    centred = not (len(sys.argv) > 5 and sys.argv[5] == 'uncentred')
    y = np.fromfile(pcm_path, dtype='<f4')
    mel = log_mel(y, centred)
    w = Weights(wdir)
    res = {'mel': [], 'tags': [], 'penultimate': [], 'dense': []}
    for s in [int(v) for v in starts.split(',')]:
        patch = mel[s:s + PATCH]
        tags, pen, dense = forward(w, patch)
        res['mel'].append(patch.tolist())
        res['tags'].append(tags.tolist())
        res['penultimate'].append(pen.tolist())
        res['dense'].append(dense.tolist())
    json.dump(res, open(out, 'w'))


if __name__ == '__main__':
    main()
