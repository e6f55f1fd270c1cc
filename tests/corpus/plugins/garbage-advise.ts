// advise returns something that is not a verdict.
export default { name: "Garbage", version: "1.0", advise: () => ({ kind: "maybe", advice: 7 }) };
