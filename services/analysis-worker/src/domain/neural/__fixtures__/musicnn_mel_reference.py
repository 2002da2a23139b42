#!/usr/bin/env python3
"""Independent numpy reference for the MusiCNN mel front end (used by mel-frontend.test.ts).

Re-states librosa's algorithm (librosa.filters.mel with norm='slaney', htk=False; librosa.stft with
center=False, window='hann' (periodic); power=2.0) in vectorised numpy, without librosa, then applies
log10(1 + 10000 * mel). Computed in float64.

usage: musicnn_mel_reference.py <input.f32> <out_prefix>
  input.f32            raw little-endian float32 mono samples at 16 kHz
  <out_prefix>.fb.f64   filterbank, float64 [96][257] row-major
  <out_prefix>.mel.f64  log-mel, float64 [frames][96] row-major (time-major)
"""
import sys
import numpy as np

SR, N_FFT, HOP, N_MELS = 16000, 512, 256, 96


def hz_to_mel(f):
    f = np.asanyarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    log_t = f >= min_log_hz
    mels = np.where(log_t, min_log_mel + np.log(np.maximum(f, 1e-300) / min_log_hz) / logstep, mels)
    return mels


def mel_to_hz(m):
    m = np.asanyarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    log_t = m >= min_log_mel
    return np.where(log_t, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def mel_filterbank(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    fmax = sr / 2.0 if fmax is None else fmax
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    weights = np.zeros((n_mels, 1 + n_fft // 2))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    return weights * enorm[:, np.newaxis]


def log_mel(y):
    window = np.hanning(N_FFT + 1)[:-1]  # periodic Hann, as scipy get_window(fftbins=True)
    if len(y) < N_FFT:
        return np.zeros((0, N_MELS))
    frames = np.lib.stride_tricks.sliding_window_view(y, N_FFT)[::HOP]
    spec = np.abs(np.fft.rfft(frames * window, n=N_FFT, axis=1)) ** 2  # [frames, 257]
    mel = spec @ mel_filterbank(SR, N_FFT, N_MELS).T  # [frames, 96]
    return np.log10(1.0 + 10000.0 * mel)


def main():
    src, prefix = sys.argv[1], sys.argv[2]
    y = np.fromfile(src, dtype='<f4').astype(np.float64)
    mel_filterbank(SR, N_FFT, N_MELS).astype('<f8').tofile(prefix + '.fb.f64')
    log_mel(y).astype('<f8').tofile(prefix + '.mel.f64')


if __name__ == '__main__':
    main()
