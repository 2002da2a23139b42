/**
 * Jest environment for suites that run ONNX Runtime: its native binding returns Float32Arrays of Node's
 * own realm, and onnxruntime-common (loaded inside the test sandbox) checks `data instanceof Float32Array`
 * against the sandbox's constructor, which fails only under Jest. Sharing the constructor makes the
 * sandbox behave like a plain Node process (where the service runs).
 */
const { TestEnvironment } = require('jest-environment-node');

class SharedTypedArraysEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.global.Float32Array = Float32Array;
  }
}

module.exports = SharedTypedArraysEnvironment;
