// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {BATCH_SETTLEMENT_ADDRESS, IDepositCollector, SignatureCheck} from "./BatchSettlement.sol";

interface IERC3009Receive {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// The x402 batch-settlement deposit collector for EIP-3009 tokens (USDC): pulls a deposit with the payer's
/// ReceiveWithAuthorization (to = this collector) and hands it to the batch settlement contract, its only caller.
/// The authorization's nonce is keccak256(abi.encode(channelId, salt)), so a payer's signature funds exactly the
/// channel it was made for (buildErc3009DepositNonce of the npm package x402 evm); collectorData is
/// abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature) (buildErc3009CollectorData).
/// Stateless: placed with anvil_setCode at its canonical address.
contract ERC3009DepositCollector is IDepositCollector {
    error OnlyBatchSettlement();
    error InvalidSignature();
    error TransferFailed();

    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData) external {
        if (msg.sender != BATCH_SETTLEMENT_ADDRESS) revert OnlyBatchSettlement();
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(collectorData, (uint256, uint256, uint256, bytes));
        bytes memory call = _receiveCall(payer, amount, validAfter, validBefore, keccak256(abi.encode(channelId, salt)), signature);
        (bool received, bytes memory reason) = token.call(call);
        if (!received) {
            assembly {
                revert(add(reason, 32), mload(reason))
            }
        }
        (bool sent, bytes memory ret) = token.call(abi.encodeWithSignature("transfer(address,uint256)", msg.sender, amount));
        if (!sent || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) revert TransferFailed();
    }

    /// receiveWithAuthorization(from = payer, to = this collector, ...) with the 65-byte signature split into v, r, s
    function _receiveCall(address payer, uint256 amount, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes memory signature)
        private
        view
        returns (bytes memory)
    {
        (uint8 v, bytes32 r, bytes32 s, bool ok) = SignatureCheck.split(signature);
        if (!ok) revert InvalidSignature();
        return abi.encodeCall(IERC3009Receive.receiveWithAuthorization, (payer, address(this), amount, validAfter, validBefore, nonce, v, r, s));
    }
}
