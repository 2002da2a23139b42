/**
 * Randomly initialised patch models for tests and benchmarks of {@link NeuralEmbedder} (no trained weights
 * ship with the project). Both take a [187, 96, 1] time x mel patch and end like MusiCNN: a linear
 * 'embedding' dense layer followed by a 50-way sigmoid 'tags' layer (the model's final output).
 */
import type * as Tf from '@tensorflow/tfjs';

/** Shape options of {@link buildTinyPatchModel}. */
export interface TinyPatchModelOptions {
  /** Size of the 'embedding' layer (default 200, MusiCNN's). */
  readonly embeddingDim?: number;
  /** Filters of the single timbral convolution (default 8). */
  readonly filters?: number;
  /** Weight-initialiser seed, for reproducible weights (default 1). */
  readonly seed?: number;
}

/**
 * Tiny model: conv2d(filters, kernel 7 frames x 96 bands, valid, relu) -> flatten (181*filters) ->
 * dense(embeddingDim, linear, name 'embedding') -> dense(50, sigmoid, name 'tags'). About 0.3 M parameters
 * with the defaults, a few ms per patch on the cpu backend.
 */
export function buildTinyPatchModel(tf: typeof Tf, options: TinyPatchModelOptions = {}): Tf.LayersModel {
  const { embeddingDim = 200, filters = 8, seed = 1 } = options;
  const model = tf.sequential();
  model.add(
    tf.layers.conv2d({
      inputShape: [187, 96, 1],
      filters,
      kernelSize: [7, 96],
      activation: 'relu',
      kernelInitializer: tf.initializers.glorotUniform({ seed }),
      biasInitializer: tf.initializers.constant({ value: 0.01 }),
      name: 'timbral',
    }),
  );
  model.add(tf.layers.flatten());
  model.add(tf.layers.dense({ units: embeddingDim, kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }), name: 'embedding' }));
  model.add(tf.layers.dense({ units: 50, activation: 'sigmoid', kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }), name: 'tags' }));
  return model;
}

/**
 * Model of roughly MusiCNN's compute cost (musicnn "big" front end, Pons & Serra 2019): timbral convs of
 * 7x38 and 7x67 (valid over bands, 'same' over time) and a 64x1 temporal conv, each max-pooled over bands,
 * concatenated -> 3 conv1d(64, k7) mid-end layers with residuals -> global max & mean pooling ->
 * dense 200 'embedding' -> dense 50 sigmoid 'tags'. For benchmarks only: shapes and cost, not weights.
 */
export function buildMusicnnSizedModel(tf: typeof Tf, seed = 1): Tf.LayersModel {
  const init = (s: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed: seed + s });
  const input = tf.input({ shape: [187, 96, 1] });
  const branch = (kt: number, kf: number, filters: number, s: number): Tf.SymbolicTensor => {
    const c = tf.layers
      .conv2d({ filters, kernelSize: [kt, kf], padding: 'valid', activation: 'relu', kernelInitializer: init(s) })
      .apply(tf.layers.zeroPadding2d({ padding: [[Math.floor((kt - 1) / 2), Math.ceil((kt - 1) / 2)], [0, 0]] }).apply(input)) as Tf.SymbolicTensor;
    const bands = c.shape[2]!;
    const pooled = tf.layers.maxPooling2d({ poolSize: [1, bands] }).apply(c) as Tf.SymbolicTensor;
    return tf.layers.reshape({ targetShape: [187, filters] }).apply(pooled) as Tf.SymbolicTensor;
  };
  const front = tf.layers
    .concatenate()
    .apply([branch(7, 38, 204, 1), branch(7, 67, 204, 2), branch(64, 1, 51, 3)]) as Tf.SymbolicTensor;
  let x = tf.layers.conv1d({ filters: 64, kernelSize: 7, padding: 'same', activation: 'relu', kernelInitializer: init(4) }).apply(front) as Tf.SymbolicTensor;
  for (let i = 0; i < 2; i++) {
    const y = tf.layers.conv1d({ filters: 64, kernelSize: 7, padding: 'same', activation: 'relu', kernelInitializer: init(5 + i) }).apply(x) as Tf.SymbolicTensor;
    x = tf.layers.add().apply([x, y]) as Tf.SymbolicTensor;
  }
  const pooled = tf.layers
    .concatenate()
    .apply([tf.layers.globalMaxPooling1d().apply(x) as Tf.SymbolicTensor, tf.layers.globalAveragePooling1d().apply(x) as Tf.SymbolicTensor]) as Tf.SymbolicTensor;
  const embedding = tf.layers.dense({ units: 200, name: 'embedding', kernelInitializer: init(8) }).apply(pooled) as Tf.SymbolicTensor;
  const tags = tf.layers.dense({ units: 50, activation: 'sigmoid', name: 'tags', kernelInitializer: init(9) }).apply(embedding) as Tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: tags });
}
