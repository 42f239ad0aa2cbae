// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {DevnetERC20} from "./DevnetERC20.sol";

/// @title TestPlainToken
/// @notice A TEST ERC-20 with neither EIP-3009 nor EIP-2612: x402 can pay with it only through
///         Permit2, after the payer approved Permit2 on it with an ordinary transaction.
/// @dev    Placed with `anvil_setCode`; see DevnetERC20.
contract TestPlainToken is DevnetERC20 {
    string public constant name = "Plain Token";
    string public constant symbol = "PLAIN";
}
