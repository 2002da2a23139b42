/** The shape of a fusion embedder version's fitted constants (embedding.ts uses them; embedding-constants.ts holds the shipped ones). */

/** A projection matrix as shipped: `rows` x `cols` int8 (base64, row-major) with one scale per row. */
export interface QuantisedMatrix {
  rows: number;
  cols: number;
  /** base64 of rows * cols signed bytes. */
  q: string;
  /** Per row: the row's largest absolute value (value = q / 127 * scale). */
  scale: number[];
}

/** The fitted constants of a fusion embedder version. */
export interface FusionConstants {
  version: string;
  /** Weight of the MusiCNN block (the dsp-v1 block gets 1 - w). */
  w: number;
  mMean: number[];
  mStd: number[];
  dMean: number[];
  dStd: number[];
  pm: QuantisedMatrix;
  pd: QuantisedMatrix;
}
