/** EVM networks as x402 v2 names them: CAIP-2 `eip155:<chain id>`. */
export type Caip2 = `eip155:${number}`;

const CAIP2_EIP155 = /^eip155:([1-9][0-9]{0,15})$/;

/** The chain id of a CAIP-2 `eip155:<id>` network, or undefined for anything else. */
export function chainIdOfCaip2(network: string): number | undefined {
  const match = CAIP2_EIP155.exec(network);
  if (!match) return undefined;
  const id = Number(match[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

export function caip2(chainId: number): Caip2 {
  return `eip155:${chainId}`;
}
