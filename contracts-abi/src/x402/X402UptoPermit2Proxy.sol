// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {ISignatureTransfer} from "./Permit2SignatureTransfer.sol";

interface IERC20Permit {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
}

/// @title X402UptoPermit2Proxy
/// @notice x402's `upto` settlement contract (canonical address 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002), to the
///         ABI the npm package x402/evm 2.27 ships as `x402UptoPermit2ProxyABI`. The payer signs one Permit2 witness transfer for a
///         maximum (`permit.permitted.amount`) with this contract as spender and a witness
///         `Witness(address to, address facilitator, uint256 validAfter)`; the facilitator named in the witness then
///         settles once for what was used, `amount <= maximum`, to `witness.to`. Permit2 binds the witness to the
///         signature, so neither the recipient nor the settling account can be changed; Permit2's nonce makes the
///         authorization single use (the unused rest of the maximum is never claimable).
///         Checks, their order and events are the official proxy's (coinbase/x402 contracts/evm, docs/X402-CONTRACTS.md):
///         a settlement logs only the argument-less `Settled()` or `SettledWithPermit()`; which authorization settled
///         how much is read from the settling call itself.
/// @dev Placed with anvil_setCode (no constructor): Permit2's address is a constant, and the reentrancy lock's
///      unlocked state is storage zero.
contract X402UptoPermit2Proxy {
    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(0x000000000022D473030F116dDEE9F6B43aC78BA3);

    /// completes Permit2's `PermitWitnessTransferFrom(...,` head; referenced types in EIP-712 (alphabetical) order
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    /// slot 0: 1 while a settlement runs
    uint256 private _locked;

    event Settled();
    /// one settlement of the authorization (payer, Permit2 nonce): `amount` moved from `payer` to `payTo`, sent by `facilitator`
    event SettledWithPermit();
    /// the token's EIP-2612 permit reverted (settlement still goes on: an approval may already exist)
    event EIP2612PermitFailedWithReason(address indexed token, address indexed owner, string reason);
    event EIP2612PermitFailedWithPanic(address indexed token, address indexed owner, uint256 errorCode);
    event EIP2612PermitFailedWithData(address indexed token, address indexed owner, bytes data);

    error AmountExceedsPermitted();
    error UnauthorizedFacilitator();
    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    /// never thrown here (Permit2's address is a constant); kept for the shipped ABI
    error InvalidPermit2Address();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();
    error ReentrancyGuardReentrantCall();

    modifier nonReentrant() {
        if (_locked != 0) revert ReentrancyGuardReentrantCall();
        _locked = 1;
        _;
        _locked = 0;
    }

    /// @notice Settle `amount` (at most the signed maximum) of the payer's signed Permit2 authorization to `witness.to`.
    ///         Only `witness.facilitator` may call. The payer must have approved Permit2 on the token.
    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _settle(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// @notice As `settle`, after trying the payer's EIP-2612 permit approving Permit2 for exactly the signed maximum.
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _checkCall(permit, amount, witness);
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20Permit(permit.permitted.token).permit(owner, address(PERMIT2), permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s) {}
        catch Error(string memory reason) {
            emit EIP2612PermitFailedWithReason(permit.permitted.token, owner, reason);
        } catch Panic(uint256 errorCode) {
            emit EIP2612PermitFailedWithPanic(permit.permitted.token, owner, errorCode);
        } catch (bytes memory data) {
            emit EIP2612PermitFailedWithData(permit.permitted.token, owner, data);
        }
        _settle(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _checkCall(ISignatureTransfer.PermitTransferFrom calldata permit, uint256 amount, Witness calldata witness) private view {
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
    }

    function _settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        _checkCall(permit, amount, witness);
        if (amount == 0) revert InvalidAmount();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransfer.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
